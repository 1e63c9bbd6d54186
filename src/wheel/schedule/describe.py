"""A cron schedule in words, from wheel's own parsed expression: what will run, said once.

    describe(cron.parse("0 0 */10 * 1", job_id))
    # 'At 00:00, on days 1, 11, 21 and 31 of the month if it falls on Monday'

The words come from the `CronExpr` the scheduler runs, not from the text, so
they say what wheel does: `H` fields as this job resolved them, the seconds
field, and the day rule of `CronExpr.matches_day` (Debian/Vixie cron's): when a
day field starts with `*` (`*/10` included), a day must match both fields;
when both are restricted without `*`, either field suffices — so `0 0 1-31 * 1`
runs every day, and says so.

The sentence has a fixed shape, which the tests read back and compare with the
runs the schedule's own expansion makes:

- times: a short list of clock times (`at 01:30 and 13:30`, at most six), or
  the seconds or minutes field (`every 15 seconds`, `every 5 minutes`,
  `at minutes 5 and 35`), narrowed by `of minutes …`, `of every minute`,
  `of every hour` or `during hours …`;
- days, after a comma: `every day`, `on Monday-Friday`, `on days 1 and 15 of
  the month`, `… if it falls on Monday` (both fields), `…, and also on Monday`
  (either field); then `in January-March` when the month is restricted.

Lists of numbers group runs of three or more into `a-b`, and a progression of
five or more into `a, b, …, z`. DST is not described here: the wall times are
what the expression names; the preview's notes say what a DST change does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from wheel.schedule.cron import CronExpr

WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July",
          "August", "September", "October", "November", "December")  # fmt: skip
MAX_LISTED_TIMES = 6
"""Up to this many times of day are listed as clock times ("at 09:00, 12:00 and 18:00")."""
_PROGRESSION = 5
"""A progression this long or longer is written with an ellipsis: "0, 7, …, 56"."""


def describe(expr: CronExpr) -> str:
    """`expr` in words: "At 01:30, on Monday-Friday"; "Every 15 seconds"."""
    times = _times(expr)
    days = _days(expr)
    if days == "every day" and not _listed(expr):
        days = ""  # "Every minute", not "Every minute, every day"; but "At 01:30, every day"
    if len(expr.months) < 12:
        days = f"{days} in {_list(sorted(expr.months), _month)}".strip()
    sentence = f"{times}, {days}" if days else times
    return sentence[:1].upper() + sentence[1:]


def _plural(word: str, values: Sequence[int]) -> str:
    return word if len(values) == 1 else f"{word}s"


def _list(values: Sequence[int], name: Callable[[int], str], last: str = "and") -> str:
    """`values` (sorted, distinct) as people write them: "1, 11, 21 and 31", "9-17",
    "0, 7, …, 56", "Monday-Friday"."""
    if len(values) >= _PROGRESSION:
        step = values[1] - values[0]
        if step > 1 and all(b - a == step for a, b in itertools.pairwise(values)):
            return f"{name(values[0])}, {name(values[1])}, …, {name(values[-1])}"
    items: list[str] = []
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and values[end + 1] == values[end] + 1:
            end += 1
        if end - start >= 2:
            items.append(f"{name(values[start])}-{name(values[end])}")
        else:
            items.extend(name(value) for value in values[start : end + 1])
        start = end + 1
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} {last} {items[-1]}"


def _number(value: int) -> str:
    return str(value)


def _hour(value: int) -> str:
    return f"{value:02d}"


def _weekday(value: int) -> str:
    return WEEKDAYS[value]


def _month(value: int) -> str:
    return MONTHS[value - 1]


def _every(values: Sequence[int], size: int, unit: str) -> str | None:
    """ "every 15 seconds" when `values` are 0, 15, 30, 45 of a field of `size` (even
    spacing, across the field's end too); None otherwise."""
    if len(values) < 2:
        return None
    step = values[1] - values[0]
    if size % step or list(values) != list(range(0, size, step)):
        return None
    return f"every {unit}" if step == 1 else f"every {step} {unit}s"


def _listed(expr: CronExpr) -> bool:
    """Whether the times are said as a list of clock times."""
    return len(expr.seconds) * len(expr.minutes) * len(expr.hours) <= MAX_LISTED_TIMES


def _times(expr: CronExpr) -> str:
    seconds, minutes, hours = expr.seconds, expr.minutes, expr.hours
    if _listed(expr):
        with_seconds = seconds != (0,)
        clock = [
            f"{h:02d}:{m:02d}" + (f":{s:02d}" if with_seconds else "")
            for h in hours
            for m in minutes
            for s in seconds
        ]
        return "at " + (clock[0] if len(clock) == 1 else f"{', '.join(clock[:-1])} and {clock[-1]}")
    if seconds == (0,):
        every = _every(minutes, 60, "minute")
        lead = every or f"at {_plural('minute', minutes)} {_list(minutes, _number)}"
    else:
        every = _every(seconds, 60, "second")
        lead = every or f"at {_plural('second', seconds)} {_list(seconds, _number)}"
        if len(minutes) < 60:
            lead += f" of {_plural('minute', minutes)} {_list(minutes, _number)}"
            every = None
        elif every is None:
            lead += " of every minute"
            every = lead  # every minute of every hour: nothing to add
    if len(hours) < 24:
        return f"{lead} during {_plural('hour', hours)} {_list(hours, _hour)}"
    return lead if every else f"{lead} of every hour"


def _days(expr: CronExpr) -> str:
    days = sorted(expr.days_of_month)
    weekdays = sorted(expr.days_of_week)
    every_date, every_weekday = len(days) == 31, len(weekdays) == 7
    of_month = f"on {_plural('day', days)} {_list(days, _number)} of the month"
    on_weekdays = f"on {_list(weekdays, _weekday)}"
    if expr.day_of_month_star or expr.day_of_week_star:
        # matches_day: both fields must match.
        if every_date and every_weekday:
            return "every day"
        if every_date:
            return on_weekdays
        if every_weekday:
            return of_month
        return f"{of_month} if it falls on {_list(weekdays, _weekday, 'or')}"
    # Both restricted without `*`: either field matches.
    if every_date or every_weekday:
        return "every day"
    return f"{of_month}, and also {on_weekdays}"
