"""Schedules in words, checked against what wheel runs.

A small reader (here, independent of wheel.schedule.describe) turns the words back
into times of day and a rule for days; the runs the schedule's own expansion makes
(`SchedulePlan.next_runs` / `runs`, in UTC so DST stays out of it) must be exactly
those: on every day from tomorrow for 430 days, at exactly those times. A table fixes
the phrasing of common expressions; hypothesis draws many more, `H` fields, seconds,
names, steps and both day-field rules included.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from wheel.errors import InvalidArgument
from wheel.model.jobs import Schedule, ScheduleKind
from wheel.schedule import compile_schedule, cron
from wheel.schedule.describe import describe

WEEKDAY_NAMES = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August",
               "September", "October", "November", "December"]  # fmt: skip
SPAN_DAYS = 430
"""Over 14 months: every weekday falls on every day of the month at least once."""
JOB = uuid.UUID(int=10)


# -- the reader: words back to times and days ------------------------------------------------


def read_list(text: str, value: Callable[[str], int]) -> set[int]:
    """ "1, 11, 21 and 31", "9-17", "0, 7, …, 56", "Monday or Friday"."""
    items = re.split(r", | and | or ", text)
    if "…" in items:
        assert len(items) == 4, text
        first, second, last = value(items[0]), value(items[1]), value(items[3])
        return set(range(first, last + 1, second - first))
    found: set[int] = set()
    for item in items:
        low, _, high = item.partition("-")
        found |= set(range(value(low), value(high or low) + 1))
    return found


def weekday(name: str) -> int:
    return WEEKDAY_NAMES.index(name)


def month(name: str) -> int:
    return MONTH_NAMES.index(name) + 1


def clock(text: str) -> int:
    parts = [int(p) for p in text.split(":")]
    return parts[0] * 3600 + parts[1] * 60 + (parts[2] if len(parts) == 3 else 0)


def read_times(text: str) -> set[int]:
    """The times of day (seconds after midnight) the words name."""
    listed = re.fullmatch(r"at ([\d:]+(?:(?:, | and )[\d:]+)*)", text)
    if listed:
        return {clock(item) for item in re.split(r", | and ", listed[1])}
    split = re.fullmatch(r"(.+?)(?: during hours? (.+)| of every hour)?", text)
    assert split, text
    lead, hours_text = split[1], split[2]
    hours = read_list(hours_text, int) if hours_text else set(range(24))
    by_seconds = re.fullmatch(
        r"(?:every (second)|every (\d+) seconds|at seconds? (.+?))"
        r"(?: of (?:every minute|minutes? (.+)))?",
        lead,
    )
    if by_seconds:
        if by_seconds[1]:
            seconds = set(range(60))
        elif by_seconds[2]:
            seconds = set(range(0, 60, int(by_seconds[2])))
        else:
            seconds = read_list(by_seconds[3], int)
        minutes = read_list(by_seconds[4], int) if by_seconds[4] else set(range(60))
    else:
        by_minutes = re.fullmatch(r"every (minute)|every (\d+) minutes|at minutes? (.+)", lead)
        assert by_minutes, lead
        seconds = {0}
        if by_minutes[1]:
            minutes = set(range(60))
        elif by_minutes[2]:
            minutes = set(range(0, 60, int(by_minutes[2])))
        else:
            minutes = read_list(by_minutes[3], int)
    return {h * 3600 + m * 60 + s for h in hours for m in minutes for s in seconds}


@dataclass(frozen=True)
class Reading:
    times: set[int]
    days: Callable[[date], bool]


def read(words: str) -> Reading:
    sentence = words[:1].lower() + words[1:]
    parts = re.fullmatch(r"(.+?)(?:, ((?:every day|on |in ).*))?", sentence)
    assert parts, words
    times = read_times(parts[1])
    tail = re.fullmatch(
        r"(?:(every day)|on ([A-Z].*?)|on days? (.+?) of the month"
        r"(?: if it falls on (.+?)|, and also on (.+?))?)?(?: ?in (.+))?",
        parts[2] or "",
    )
    assert tail, words
    every, only_weekdays, dates, and_weekdays, or_weekdays, months_text = tail.groups()
    months = read_list(months_text, month) if months_text else set(range(1, 13))

    def runs_on(day: date) -> bool:
        if day.month not in months:
            return False
        sunday0 = (day.weekday() + 1) % 7
        if only_weekdays:
            return sunday0 in read_list(only_weekdays, weekday)
        if dates:
            on_date = day.day in read_list(dates, int)
            if and_weekdays:
                return on_date and sunday0 in read_list(and_weekdays, weekday)
            if or_weekdays:
                return on_date or sunday0 in read_list(or_weekdays, weekday)
            return on_date
        return True  # "every day", or nothing said of days

    del every
    return Reading(times, runs_on)


# -- what wheel runs -------------------------------------------------------------------------


def check(expression: str, job_id: uuid.UUID = JOB) -> str:
    """Describe `expression` and compare the words, read back, with wheel's runs."""
    now = datetime.now(UTC)
    schedule = Schedule(ScheduleKind.CRON, cron=expression, time_zone="UTC")
    plan = compile_schedule(schedule, job_id, now=now)
    words = describe(cron.parse(expression, job_id))
    reading = read(words)
    days = [now.date() + timedelta(days=n) for n in range(1, SPAN_DAYS + 1)]
    # The first day it runs, expanded whole (day by day: an every-second schedule's
    # day is 86,400 runs, and a month of them is too many for a test).
    for day in days:
        first_day = datetime.combine(day, time(), UTC)
        first_runs = plan.runs(first_day, first_day + timedelta(days=1))
        if first_runs:
            break
    else:  # 29 February, more than 430 days away: no day in the span, and none said
        assert not any(reading.days(day) for day in days), (expression, words)
        return words
    times = {int((run.instant - first_day).total_seconds()) for run in first_runs}
    assert times == reading.times, (expression, words, sorted(times ^ reading.times)[:5])
    # Every time of day is on every day it runs: a day runs if its first time does.
    first_time = first_runs[0].instant - first_day
    run_days = {
        day
        for day in days
        if plan.runs(
            datetime.combine(day, time(), UTC) + first_time,
            datetime.combine(day, time(), UTC) + first_time + timedelta(seconds=1),
        )
    }
    said_days = {day for day in days if reading.days(day)}
    assert run_days == said_days, (expression, words, sorted(run_days ^ said_days)[:5])
    return words


# -- the phrasing of common expressions ------------------------------------------------------

TABLE = [
    ("* * * * *", "Every minute"),
    ("*/5 * * * *", "Every 5 minutes"),
    ("0 * * * *", "At minute 0 of every hour"),
    ("5,35 * * * *", "At minutes 5 and 35 of every hour"),
    ("*/7 * * * *", "At minutes 0, 7, …, 56 of every hour"),
    ("30 1 * * *", "At 01:30, every day"),
    ("30 1 * * 1-5", "At 01:30, on Monday-Friday"),
    ("0 9,12,18 * * *", "At 09:00, 12:00 and 18:00, every day"),
    ("0 */2 * * *", "At minute 0 during hours 00, 02, …, 22"),
    ("*/15 9-17 * * 1-5", "Every 15 minutes during hours 09-17, on Monday-Friday"),
    ("* * * * * *", "Every second"),
    ("*/10 * * * * *", "Every 10 seconds"),
    ("30 * * * * *", "At second 30 of every minute"),
    ("*/10 0-9 * * * *", "Every 10 seconds of minutes 0-9 of every hour"),
    ("15 30 1 * * *", "At 01:30:15, every day"),
    # Debian cron's rule, as wheel's matcher applies it: a day field starting with `*`
    # (`*/10` too) means both fields must match; two restricted fields, either.
    ("0 0 */10 * 1", "At 00:00, on days 1, 11, 21 and 31 of the month if it falls on Monday"),
    ("0 0 1,15 * 1", "At 00:00, on days 1 and 15 of the month, and also on Monday"),
    ("0 0 1-31 * 1", "At 00:00, every day"),
    (
        "0 0 13 * */2",
        "At 00:00, on day 13 of the month if it falls on Sunday, Tuesday, Thursday or Saturday",
    ),
    ("0 0 1 1 *", "At 00:00, on day 1 of the month in January"),
    ("0 12 * 6,12 *", "At 12:00, every day in June and December"),
    ("* * * jan-mar mon", "Every minute, on Monday in January-March"),
    ("0 0 * * 0,6", "At 00:00, on Sunday and Saturday"),
    ("0 0 * * 7", "At 00:00, on Sunday"),
    ("@weekly", "At 00:00, on Sunday"),
    ("@hourly", "At minute 0 of every hour"),
]


@pytest.mark.parametrize(("expression", "words"), TABLE)
def test_common_expressions_read_as_they_run(expression: str, words: str) -> None:
    assert check(expression) == words


def test_h_fields_are_said_as_this_job_resolved_them() -> None:
    for n in range(5):
        job = uuid.UUID(int=1000 + n)
        resolved = cron.parse("H H(2-4) * * *", job)
        assert check("H H(2-4) * * *", job) == (
            f"At {resolved.hours[0]:02d}:{resolved.minutes[0]:02d}, every day"
        )
        check("H/15 * * * *", job)
        check("H H * * H", job)


# -- many more: drawn ------------------------------------------------------------------------


def _field(low: int, high: int, names: list[str] | None = None, star: bool = True):  # type: ignore[no-untyped-def]
    number = st.integers(low, high)
    step = st.integers(1, high - low + 1)

    def ranged(pair: tuple[int, int]) -> str:
        a, b = sorted(pair)
        return f"{a}-{b}"

    part = st.one_of(
        number.map(str),
        st.tuples(number, number).map(ranged),
        st.tuples(st.tuples(number, number).map(ranged), step).map(lambda p: f"{p[0]}/{p[1]}"),
        st.tuples(number, step).map(lambda p: f"{p[0]}/{p[1]}"),
        step.map(lambda s: f"*/{s}"),
        st.just("H"),
        step.map(lambda s: f"H/{s}"),
        st.tuples(number, number).map(lambda p: f"H({min(p)}-{max(p)})"),
        *([st.sampled_from(names)] if names else []),
    )
    listed = st.lists(part, min_size=1, max_size=3).map(",".join)
    return st.one_of(st.just("*"), listed) if star else listed


# Not `*` for seconds: an every-second day is 86,400 runs to expand (the table has one).
SECONDS = st.one_of(st.none(), _field(0, 59, star=False))
MINUTES = _field(0, 59)
HOURS = _field(0, 23)
DATES = st.one_of(_field(1, 31), st.just("?"))
MONTHS = _field(1, 12, ["jan", "feb", "mar", "jun", "dec"])
WEEKDAYS = st.one_of(_field(0, 7, ["mon", "tue", "fri", "sat", "sun"]), st.just("?"))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seconds=SECONDS, minutes=MINUTES, hours=HOURS, dates=DATES, months=MONTHS,
    weekdays=WEEKDAYS, job=st.integers(0, 2**32).map(lambda n: uuid.UUID(int=n)),
)  # fmt: skip
def test_drawn_expressions_read_as_they_run(
    seconds: str | None, minutes: str, hours: str, dates: str, months: str, weekdays: str,
    job: uuid.UUID,
) -> None:  # fmt: skip
    fields = [minutes, hours, dates, months, weekdays]
    expression = " ".join([seconds, *fields] if seconds is not None else fields)
    try:
        compile_schedule(Schedule(ScheduleKind.CRON, cron=expression), job, now=datetime.now(UTC))
    except InvalidArgument:
        assume(False)  # never runs (30 February), or a step past its range's end
    check(expression, job)
