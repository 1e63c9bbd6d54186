"""The runs on both sides of a zone's next DST change, whatever the schedule's frequency.

The change is the next one after now, found from zoneinfo (never a fixed date), and
the runs are checked against the brute-force reference: real time walked step by
step, the wall clock read at each step.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tests.unit.schedule.reference import Walk, transitions
from wheel.model.jobs import Schedule, ScheduleKind
from wheel.schedule import compile_schedule, next_transition, preview_around
from wheel.schedule.zones import Transition

JOB = uuid.UUID(int=29)
YEAR = timedelta(days=400)


def changes(zone: str) -> list[Transition]:
    """The zone's next two changes after now: one forward, one back."""
    tz = ZoneInfo(zone)
    first = next_transition(tz, datetime.now(UTC), YEAR)
    assert first is not None
    second = next_transition(tz, first.at, YEAR)
    assert second is not None
    return [first, second]


@pytest.mark.parametrize("zone", ["Europe/London", "Australia/Lord_Howe", "America/Santiago"])
def test_the_next_change_is_the_first_the_reference_sees(zone: str) -> None:
    now = datetime.now(UTC)
    seen = [t for t in transitions(ZoneInfo(zone), now.year, now.year + 2) if t > now]
    found = changes(zone)
    assert [change.at for change in found] == seen[:2]
    assert {change.forward for change in found} == {True, False}
    for change in found:
        assert change.before.utcoffset() != change.after.utcoffset()
        # One instant, two wall clocks.
        assert change.before.astimezone(UTC) == change.after.astimezone(UTC) == change.at


def test_no_change_in_a_zone_without_dst() -> None:
    now = datetime.now(UTC)
    assert next_transition(ZoneInfo("UTC"), now, YEAR) is None
    assert next_transition(ZoneInfo("Asia/Tokyo"), now, YEAR) is None


def test_a_change_says_which_way_the_clocks_go() -> None:
    forward, back = sorted(changes("Europe/London"), key=lambda change: not change.forward)
    assert forward.describe() == "clocks go forward 01:00 GMT → 02:00 BST"
    assert back.describe() == "clocks go back 02:00 BST → 01:00 GMT"
    half = {change.describe() for change in changes("Australia/Lord_Howe")}
    assert half == {
        "clocks go forward 02:00 +1030 → 02:30 +11",
        "clocks go back 02:00 +11 → 01:30 +1030",
    }


# (expression, the wall clock's time between two runs, the reference's step)
SCHEDULES = [
    ("*/10 * * * * *", timedelta(seconds=10), timedelta(seconds=1)),
    ("* * * * *", timedelta(minutes=1), timedelta(minutes=1)),
    ("*/15 * * * *", timedelta(minutes=15), timedelta(minutes=1)),
    ("0 * * * *", timedelta(hours=1), timedelta(minutes=1)),
    ("30 1 * * *", timedelta(days=1), timedelta(minutes=1)),
    ("0 2 * * *", timedelta(days=1), timedelta(minutes=1)),
]


@pytest.mark.parametrize("zone", ["Europe/London", "Australia/Lord_Howe"])
@pytest.mark.parametrize(("expression", "period", "step"), SCHEDULES)
def test_the_runs_next_to_each_change_are_shown_whatever_the_frequency(
    zone: str, expression: str, period: timedelta, step: timedelta
) -> None:
    tz = ZoneInfo(zone)
    schedule = Schedule(ScheduleKind.CRON, cron=expression, time_zone=zone)
    plan = compile_schedule(schedule, JOB, now=datetime.now(UTC))
    assert plan.expr is not None
    assert plan.rule is not None
    for change in changes(zone):
        around = preview_around(plan, change.at, 4, 4)
        span = 6 * period
        reference = Walk(tz, change.at - span, change.at + span, step, timedelta(hours=3))
        expected = reference.runs(plan.expr, plan.rule)
        earlier = [run for run in expected if run < change.at][-4:]
        later = [run for run in expected if run >= change.at][:4]
        assert [run.scheduled_for for run in around.earlier] == earlier
        assert [run.scheduled_for for run in around.later] == later
        # Next to the change: no further from it than one period and the change's size.
        size = abs(change.after.utcoffset() - change.before.utcoffset())  # type: ignore[operator]
        assert change.at - earlier[-1] <= period + size
        assert later[0] - change.at <= period + size


def test_a_repeated_wall_time_is_noted_on_the_runs_after_the_change() -> None:
    back = next(change for change in changes("Europe/London") if not change.forward)
    schedule = Schedule(ScheduleKind.CRON, cron="*/30 * * * *", time_zone="Europe/London")
    plan = compile_schedule(schedule, JOB, now=datetime.now(UTC))
    around = preview_around(plan, back.at, 2, 2)
    assert [run.wall_time[11:] for run in around.earlier] == ["01:00:00+01:00", "01:30:00+01:00"]
    assert [run.wall_time[11:] for run in around.later] == ["01:00:00+00:00", "01:30:00+00:00"]
    assert all("happens twice" in (run.note or "") for run in [*around.earlier, *around.later])


def test_bounds_limit_the_runs_on_either_side() -> None:
    forward = next(change for change in changes("Europe/London") if change.forward)
    schedule = Schedule(
        ScheduleKind.CRON, cron="* * * * *", time_zone="Europe/London",
        starts_at=forward.at - timedelta(minutes=2), ends_at=forward.at + timedelta(minutes=1),
    )  # fmt: skip
    plan = compile_schedule(schedule, JOB, now=datetime.now(UTC))
    around = preview_around(plan, forward.at, 5, 5)
    minute = timedelta(minutes=1)
    assert [run.scheduled_for for run in around.earlier] == [
        forward.at - 2 * minute,
        forward.at - minute,
    ]
    assert [run.scheduled_for for run in around.later] == [forward.at, forward.at + minute]


def test_a_limit_stops_expansion_after_the_day_it_is_reached_from_either_end() -> None:
    """What keeps a preview of an every-second job that runs only in one month from
    expanding whole months of seconds (2.6 million runs) for the few it shows."""
    now = datetime.now(UTC)
    schedule = Schedule(ScheduleKind.CRON, cron="* * * * * *", time_zone="UTC")
    plan = compile_schedule(schedule, JOB, now=now)
    start = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
    end = start + timedelta(days=31)
    day_s = 86_400
    first = plan.runs(start, end, limit=5)
    assert len(first) == day_s
    assert (first[0].instant, first[-1].instant) == (start, start + timedelta(seconds=day_s - 1))
    last = plan.runs(start, end, limit=5, from_end=True)
    assert len(last) == day_s
    assert last[-1].instant == end - timedelta(seconds=1)
    # Both walks use it: the runs either side of an instant in a January-only job.
    january = compile_schedule(
        Schedule(ScheduleKind.CRON, cron="* * * * 1 *", time_zone="UTC"), JOB, now=now
    )
    at = datetime(now.year + 1, 2, 1, tzinfo=UTC)
    around = preview_around(january, at, 2, 2)
    second = timedelta(seconds=1)
    assert [run.scheduled_for for run in around.earlier] == [at - 2 * second, at - second]
    next_january = datetime(now.year + 2, 1, 1, tzinfo=UTC)
    assert [run.scheduled_for for run in around.later] == [next_january, next_january + second]
