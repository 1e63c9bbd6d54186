"""A smear must not cross DST: the spacing it is checked against is real time, not wall time.

The bound (`wheel.schedule.spacing.real_spacing`) is compared with the
shortest gap between consecutive runs found by the brute-force walk of
`reference` around every transition of many zones over five years: equal when
every day matches the expression, never larger when some days do not.
"""

from __future__ import annotations

import functools
import itertools
import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.schedule import reference
from wheel.errors import InvalidArgument
from wheel.model.jobs import DstFold, DstGap, Schedule, ScheduleKind
from wheel.schedule import compile_schedule, cron
from wheel.schedule.dst import DstRule
from wheel.schedule.spacing import real_spacing, wall_spacing

JOB = uuid.UUID(int=7)
FIRST_YEAR, YEARS = 2026, 5
NOW = datetime(FIRST_YEAR, 1, 1, tzinfo=UTC)
WINDOW = timedelta(hours=30)
"""Around each transition: longer than a day, so the runs on either side are walked."""
ZONES = [
    "Europe/London", "Europe/Dublin", "America/New_York", "America/St_Johns",
    "America/Santiago", "America/Havana", "Australia/Lord_Howe", "Australia/Adelaide",
    "Pacific/Chatham", "Africa/Casablanca", "Asia/Beirut", "America/Asuncion",
    "Antarctica/Troll", "UTC",
]  # fmt: skip


@functools.cache
def transitions(name: str) -> list[datetime]:
    return reference.transitions(ZoneInfo(name), FIRST_YEAR, FIRST_YEAR + YEARS - 1)


@functools.cache
def walks(name: str) -> list[reference.Walk]:
    """The walk around each transition, made once per zone and shared by every check."""
    tz = ZoneInfo(name)
    return [
        reference.Walk(tz, instant - WINDOW, instant + WINDOW, reference.MINUTE, margin=WINDOW)
        for instant in transitions(name)
    ]


def walked_spacing(expr: cron.CronExpr, name: str, rule: DstRule) -> timedelta | None:
    """The shortest real gap between consecutive runs near any transition (the walk's)."""
    shortest: timedelta | None = None
    for walk in walks(name):
        for a, b in itertools.pairwise(walk.runs(expr, rule)):
            shortest = b - a if shortest is None else min(shortest, b - a)
    return shortest


def bound(expr: cron.CronExpr, name: str, rule: DstRule) -> timedelta:
    return real_spacing(expr, ZoneInfo(name), rule, FIRST_YEAR, YEARS)


def test_the_issues_cases_are_refused_and_a_smear_within_real_time_is_kept() -> None:
    new_york = "0 1,3 * * *"  # 2 h apart on the wall; 1 h the night clocks go forward
    almost_two_hours = timedelta(hours=1, minutes=59, seconds=59, milliseconds=999)
    cases = [(almost_two_hours, False), (timedelta(hours=1), False), (timedelta(minutes=59), True)]
    for smear, accepted in cases:
        schedule = Schedule(ScheduleKind.CRON, cron=new_york, time_zone="America/New_York",
                            smear=smear)  # fmt: skip
        if accepted:
            compile_schedule(schedule, JOB, now=NOW)
        else:
            with pytest.raises(InvalidArgument, match="in real time, across DST") as refused:
                compile_schedule(schedule, JOB, now=NOW)
            assert refused.value.field == "schedule.smear"
    # Lord Howe repeats 01:30 30 minutes apart: its two passes bound the smear.
    lord_howe = Schedule(ScheduleKind.CRON, cron="30 * * * *", time_zone="Australia/Lord_Howe",
                         smear=timedelta(minutes=59))  # fmt: skip
    with pytest.raises(InvalidArgument, match="0:30:00 between two runs"):
        compile_schedule(lord_howe, JOB, now=NOW)
    # Fold 'first' runs 01:30 once, but the night the clocks go forward 30 minutes,
    # 01:30 and 02:30 are 30 minutes apart too.
    once = Schedule(ScheduleKind.CRON, cron="30 * * * *", time_zone="Australia/Lord_Howe",
                    smear=timedelta(minutes=59), dst_fold=DstFold.FIRST)  # fmt: skip
    with pytest.raises(InvalidArgument, match="0:30:00 between two runs"):
        compile_schedule(once, JOB, now=NOW)
    # Without DST the wall clock is real time.
    utc = Schedule(ScheduleKind.CRON, cron=new_york, smear=timedelta(hours=1, minutes=59))
    compile_schedule(utc, JOB, now=NOW)


@pytest.mark.parametrize("name", ZONES)
@pytest.mark.parametrize(
    "text",
    ["0 1,3 * * *", "30 * * * *", "0,30 1,2 * * *", "45 2 * * *", "*/20 * * * *",
     "31,59 * * * *", "0 0 * * *", "15 23 * * *", "0 1-3 * * *"],
)  # fmt: skip
@pytest.mark.parametrize("fold", [DstFold.DEFAULT, DstFold.BOTH, DstFold.FIRST])
def test_the_bound_is_the_walks_shortest_gap(name: str, text: str, fold: DstFold) -> None:
    expr = cron.parse(text, JOB)
    rule = DstRule.for_expression(expr.wildcard, DstGap.DEFAULT, fold)
    walked = walked_spacing(expr, name, rule)
    expected = wall_spacing(expr) if walked is None else min(walked, wall_spacing(expr))
    assert bound(expr, name, rule) == expected, f"{text!r} in {name} under {rule}"


@settings(max_examples=80, deadline=None)
@given(
    minute=st.sampled_from(["0", "30", "0,30", "*/15", "45", "59", "*/20", "1,59", "10-12"]),
    hour=st.sampled_from(["*", "0", "1", "2", "1,3", "0-3", "*/2", "23", "2,3"]),
    days=st.sampled_from([("*", "*", "*"), ("1-15", "*", "*"), ("*", "*", "0"), ("*", "3", "*")]),
    name=st.sampled_from(ZONES),
    gap=st.sampled_from(list(DstGap)),
    fold=st.sampled_from(list(DstFold)),
)
def test_random_schedules_are_never_bounded_too_generously(
    minute: str, hour: str, days: tuple[str, str, str], name: str, gap: DstGap, fold: DstFold
) -> None:
    expr = cron.parse(f"{minute} {hour} {' '.join(days)}", JOB)
    rule = DstRule.for_expression(expr.wildcard, gap, fold)
    walked = walked_spacing(expr, name, rule)
    mine = bound(expr, name, rule)
    if walked is not None:
        assert mine <= walked, "a smear this bound allows would move a run past the next"
    if days == ("*", "*", "*"):
        expected = wall_spacing(expr) if walked is None else min(walked, wall_spacing(expr))
        assert mine == expected, "exact when every day runs"
