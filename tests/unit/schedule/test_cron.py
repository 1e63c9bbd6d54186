"""Cron parsing: what each field accepts, errors that name the field, H, and croniter agreement."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from wheel.errors import InvalidArgument
from wheel.model.jobs import DstFold, DstGap, Schedule, ScheduleKind
from wheel.schedule import compile_schedule, cron
from wheel.schedule.dst import DstRule
from wheel.schedule.expand import expand

JOB = uuid.UUID(int=1)


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("0 9 32 * *", "day-of-month 32 out of range 1-31"),
        ("60 * * * *", "minute 60 out of range 0-59"),
        ("0 24 * * *", "hour 24 out of range 0-23"),
        ("0 0 * 13 *", "month 13 out of range 1-12"),
        ("0 0 * * 8", "day-of-week 8 out of range 0-7"),
        ("61 0 0 * * *", "second 61 out of range 0-59"),
        ("0 9 * * mon-", "day-of-week '' is not a number or a name (sun, mon, tue, ...)"),
        ("0 9 * foo *", "month 'foo' is not a number or a name (jan, feb, mar, ...)"),
        ("*/0 * * * *", "minute step '0' is not a positive number"),
        ("0 17-9 * * *", "hour range 17-9 runs backwards"),
        ("0 9 * *", "expected 5 fields (minute hour day-of-month month day-of-week) or 6 "
                    "with a leading second, got 4"),
        ("0,,5 * * * *", "minute has an empty list item"),
        ("@fortnightly", "unknown alias '@fortnightly'"),
        ("@reboot", "@reboot has no meaning"),
        ("H(30-10) * * * *", "minute H(30-10): the range runs backwards"),
    ],
)  # fmt: skip
def test_errors_name_the_field_and_the_reason(expression: str, reason: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        cron.parse(expression, JOB)
    assert caught.value.field == "schedule.cron"
    assert caught.value.reason.startswith(reason)


def test_names_aliases_and_sunday_as_seven() -> None:
    expr = cron.parse("0 9 * JAN,jul Mon-Fri,7", JOB)
    assert expr.months == {1, 7}
    assert expr.days_of_week == {0, 1, 2, 3, 4, 5}
    assert cron.parse("@hourly", JOB).minutes == (0,)
    assert cron.parse("@hourly", JOB).wildcard
    assert not cron.parse("@daily", JOB).wildcard


@pytest.mark.parametrize(
    ("expression", "wildcard"),
    [("*/15 9 * * *", True), ("0 */2 * * *", True), ("0,30 9 * * *", False),
     ("0-59 9 * * *", False), ("H * * * *", True), ("H H * * *", False),
     ("* 30 1 * * *", False)],
)  # fmt: skip
def test_wildcard_is_a_star_at_the_start_of_minute_or_hour(expression: str, wildcard: bool) -> None:
    assert cron.parse(expression, JOB).wildcard is wildcard


def test_h_is_stable_per_job_and_spreads_across_jobs() -> None:
    minutes = [cron.parse("H * * * *", uuid.UUID(int=n)).minutes for n in range(600)]
    assert all(len(m) == 1 for m in minutes)
    assert len({m[0] for m in minutes}) == 60, "every minute is someone's"
    assert cron.parse("H * * * *", uuid.UUID(int=7)).minutes == minutes[7]


def test_h_ranges_and_steps() -> None:
    for n in range(200):
        job = uuid.UUID(int=n)
        (minute,) = cron.parse("H(0-29) 9 * * 1-5", job).minutes
        assert 0 <= minute <= 29
        quarter = cron.parse("H/15 * * * *", job).minutes
        assert len(quarter) == 4
        assert {b - a for a, b in itertools.pairwise(quarter)} == {15}
        (day,) = cron.parse("0 0 H * *", job).days_of_month
        assert 1 <= day <= 28, "a bare H day exists in every month"


def test_both_day_fields_restricted_means_either() -> None:
    expr = cron.parse("0 0 13 * 5", JOB)  # the 13th, or any Friday
    assert expr.matches_day(13, 3, 2)
    assert expr.matches_day(6, 3, 5)
    assert not expr.matches_day(6, 3, 4)
    star = cron.parse("0 0 13 * *", JOB)
    assert not star.matches_day(6, 3, 5)


def test_a_stepped_star_day_field_is_unrestricted_as_in_debian_cron() -> None:
    expr = cron.parse("0 0 */10 * 1-5", JOB)  # days 1, 11, 21, 31 that are weekdays
    assert expr.matches_day(11, 3, 3)
    assert not expr.matches_day(12, 3, 3), "not: the 12th just because it is a weekday"
    assert not expr.matches_day(11, 3, 6)


SUN, MON, TUE, WED, THU, FRI, SAT = range(7)


@pytest.mark.parametrize(
    ("field", "days"),
    [
        ("1/2", {MON, WED, FRI, SUN}),  # from 1 to the field's end, 7: Sunday again
        ("MON/2", {MON, WED, FRI, SUN}),
        ("1-7/2", {MON, WED, FRI, SUN}),
        ("1-6/2", {MON, WED, FRI}),
        ("*/2", {SUN, TUE, THU, SAT}),
        ("0/2", {SUN, TUE, THU, SAT}),
        ("5/3", {FRI}),
        ("4/3", {THU, SUN}),
        ("7/2", {SUN}),
    ],
)
def test_weekday_steps_run_to_seven_as_in_debian_cron(field: str, days: set[int]) -> None:
    """Debian, Vixie and cronie read `N/S` as N to the field's end, and the weekday field
    ends at 7; croniter ends it at 6 and drops Sunday from `1/2` (docs/schedules.md)."""
    expr = cron.parse(f"0 9 * * {field}", JOB)
    assert set(expr.days_of_week) == days
    first_monday = datetime(2027, 3, 1, tzinfo=UTC)  # a Monday
    schedule = Schedule(ScheduleKind.CRON, cron=f"0 9 * * {field}")
    plan = compile_schedule(schedule, JOB, now=first_monday)
    runs = plan.next_runs(first_monday, len(days))
    assert {(r.instant.weekday() + 1) % 7 for r in runs} == days, "and the runs say so"


FIELDS = st.tuples(
    st.sampled_from(["0", "*/15", "5,35", "10-20/5", "*", "59"]),
    st.sampled_from(["*", "0", "9-17", "*/6", "23", "1,13"]),
    st.sampled_from(["*", "1", "15,31", "1-7", "*/10"]),
    st.sampled_from(["*", "1", "2,8", "6-9", "*/3"]),
    st.sampled_from(["*", "1-5", "0", "6,0", "3"]),
)


@settings(max_examples=150, deadline=None)
@given(fields=FIELDS, start_day=st.integers(min_value=0, max_value=3000))
def test_matching_agrees_with_croniter_in_utc(fields: tuple[str, ...], start_day: int) -> None:
    # croniter reads `*/10` in a day field as a restriction (both day fields
    # restricted: either matches); Vixie and Debian cron read any field that
    # starts with `*` as unrestricted, and so does wheel (see the test below).
    assume(not (fields[2].startswith("*/") and fields[4] != "*"))
    assume(not (fields[4].startswith("*/") and fields[2] != "*"))
    text = " ".join(fields)
    start = datetime(2021, 1, 1, tzinfo=UTC) + timedelta(days=start_day)
    expr = cron.parse(text, JOB)
    rule = DstRule.for_expression(expr.wildcard, DstGap.DEFAULT, DstFold.DEFAULT)
    mine = [
        o.instant for o in expand(expr, ZoneInfo("UTC"), rule, start, start + timedelta(days=40))
    ][:50]
    theirs = croniter(text, start - timedelta(seconds=1))
    expected = [theirs.get_next(datetime).astimezone(UTC) for _ in range(len(mine) or 1)]
    if mine:
        assert mine == expected[: len(mine)]
    else:
        assert expected[0] >= start + timedelta(days=40)
