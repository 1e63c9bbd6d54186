"""Interval schedules: the grid, both DST policies, against brute force at real transitions.

Transitions are found from the zone data (2020-2035, `reference.transitions`), never
from today. `elapsed` is checked against stepping from the anchor one `every` at a
time; `wall` against the reference's minute-by-minute walk of real time, with the
wall grid as the predicate and the DST rule applied as stated in `reference`.
"""

from __future__ import annotations

import functools
import itertools
import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tests.unit.schedule import reference
from wheel.errors import InvalidArgument
from wheel.model.jobs import DstFold, DstGap, IntervalDst, Schedule, ScheduleKind
from wheel.schedule import compile_schedule, preview, preview_around
from wheel.schedule.interval import IntervalPlan, describe_interval, spoken

JOB = uuid.UUID(int=7)
ZONES = ["Europe/London", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham"]
EVERIES = [
    timedelta(minutes=15),
    timedelta(minutes=20),
    timedelta(minutes=90),
    timedelta(hours=7),
    timedelta(hours=24),
    timedelta(hours=36),
]
ANCHORS = [None, datetime(2001, 5, 3, 9, 10, tzinfo=UTC)]
WINDOW = timedelta(hours=6)


@functools.cache
def transitions(name: str) -> list[datetime]:
    return reference.transitions(ZoneInfo(name), 2025, 2026)


def interval(
    every: timedelta,
    zone: str = "UTC",
    *,
    anchor: datetime | None = None,
    dst: IntervalDst = IntervalDst.ELAPSED,
    gap: DstGap = DstGap.DEFAULT,
    fold: DstFold = DstFold.DEFAULT,
    smear: timedelta = timedelta(0),
) -> Schedule:
    return Schedule(
        ScheduleKind.INTERVAL,
        every=every,
        time_zone=zone,
        anchor=anchor,
        interval_dst=dst,
        dst_gap=gap,
        dst_fold=fold,
        smear=smear,
    )


def stepped(anchor: datetime, every: timedelta, start: datetime, end: datetime) -> list[datetime]:
    """anchor + k * every in [start, end), by stepping (no division): in strides of
    4096 steps towards the window, then one step at a time."""
    instant, stride = anchor, every * 4096
    while instant + stride < start:
        instant += stride
    while instant >= start:
        instant -= every
    while instant < start:
        instant += every
    found = []
    while instant < end:
        found.append(instant)
        instant += every
    return found


def walked_wall_runs(
    walk: reference.Walk, origin: datetime, every: timedelta, plan: IntervalPlan
) -> list[datetime]:
    """The wall grid's runs in the walk's window, by the reference's statement of the rule."""

    def on_grid(wall: datetime) -> bool:
        return (wall - origin) % every == timedelta(0)

    found: set[datetime] = set()
    if plan.rule.gap is DstGap.SHIFT:
        for instant, walls in walk.jumps:
            if any(on_grid(wall) for wall in walls):
                found.add(instant)
    for wall, instants in walk.shown.items():
        if not on_grid(wall):
            continue
        if len(instants) == 1 or plan.rule.fold is DstFold.BOTH:
            found.update(instants)
        elif plan.rule.fold is DstFold.FIRST:
            found.add(min(instants))
        else:
            found.add(max(instants))
    return sorted(i for i in found if walk.start <= i < walk.end)


@pytest.mark.parametrize("name", ZONES)
def test_elapsed_runs_are_the_grid_of_instants_across_every_transition(name: str) -> None:
    tz = ZoneInfo(name)
    for change in transitions(name):
        start, end = change - WINDOW, change + WINDOW
        for every in EVERIES:
            for anchor in ANCHORS:
                plan = compile_schedule(interval(every, name, anchor=anchor), JOB, now=start)
                runs = plan.runs(start, end)
                expected = stepped(anchor or datetime(1970, 1, 1, tzinfo=UTC), every, start, end)
                assert [r.instant for r in runs] == expected, (name, change, every, anchor)
                for run in runs:
                    assert run.wall == run.instant.astimezone(tz).replace(tzinfo=None)


@pytest.mark.parametrize("name", ZONES)
def test_wall_runs_match_the_minute_walk_at_every_transition(name: str) -> None:
    tz = ZoneInfo(name)
    rules = [
        (DstGap.DEFAULT, DstFold.DEFAULT),
        (DstGap.SHIFT, DstFold.BOTH),
        (DstGap.SKIP, DstFold.LAST),
        (DstGap.SHIFT, DstFold.FIRST),
    ]
    compared = 0
    for change in transitions(name):
        start, end = change - WINDOW, change + WINDOW
        walk = reference.Walk(tz, start, end, reference.MINUTE, margin=WINDOW)
        for every in EVERIES:
            for anchor in ANCHORS:
                for gap, fold in rules:
                    schedule = interval(
                        every, name, anchor=anchor, dst=IntervalDst.WALL, gap=gap, fold=fold
                    )
                    plan = compile_schedule(schedule, JOB, now=start)
                    assert plan.interval is not None
                    mine = [r.instant for r in plan.runs(start, end)]
                    origin = plan.interval.origin
                    walked = walked_wall_runs(walk, origin, every, plan.interval)
                    assert mine == walked, (name, change, every, anchor, gap, fold)
                    # Two hours well before the change: the no-transition shortcut.
                    early = start + timedelta(hours=2)
                    assert [r.instant for r in plan.runs(start, early)] == [
                        i for i in walked if i < early
                    ]
                    compared += 1
    assert compared == len(transitions(name)) * len(EVERIES) * len(ANCHORS) * len(rules)


def _first_change(name: str, forward: bool) -> datetime:
    tz = ZoneInfo(name)
    for change in transitions(name):
        before = reference.offset_at_instant(tz, change - timedelta(minutes=1))
        if (reference.offset_at_instant(tz, change) > before) == forward:
            return change
    raise AssertionError(f"{name} has no such change")


def test_a_daily_elapsed_job_keeps_real_time_and_a_wall_job_keeps_the_clock() -> None:
    spring = _first_change("Europe/London", forward=True)
    # 09:00 GMT on a day before the change (the anchor's date is from the zone data).
    anchor = (spring - timedelta(days=3)).replace(hour=9, minute=0)
    day = timedelta(hours=24)
    elapsed = compile_schedule(interval(day, "Europe/London", anchor=anchor), JOB, now=anchor)
    wall = compile_schedule(
        interval(day, "Europe/London", anchor=anchor, dst=IntervalDst.WALL), JOB, now=anchor
    )
    after = spring + timedelta(days=1)
    assert [r.wall_time[11:] for r in preview(elapsed, after, 2)] == ["10:00:00+01:00"] * 2
    assert [r.wall_time[11:] for r in preview(wall, after, 2)] == ["09:00:00+01:00"] * 2
    around = preview_around(wall, spring, 1, 1)
    assert around.later[0].fire_at - around.earlier[0].fire_at == timedelta(hours=23)
    assert around.later[0].note is not None
    assert "23 hours of real time" in around.later[0].note
    crossing = preview_around(elapsed, spring, 1, 1)
    assert crossing.later[0].fire_at - crossing.earlier[0].fire_at == day
    assert crossing.later[0].note is not None
    assert "1 day of real time" in crossing.later[0].note


def test_an_hourly_elapsed_job_runs_every_60_minutes_across_both_changes() -> None:
    for forward in (True, False):
        change = _first_change("America/New_York", forward)
        plan = compile_schedule(interval(timedelta(hours=1), "America/New_York"), JOB, now=change)
        runs = plan.runs(change - timedelta(hours=4), change + timedelta(hours=4))
        assert len(runs) == 8
        assert {b.instant - a.instant for a, b in itertools.pairwise(runs)} == {timedelta(hours=1)}


def test_a_wall_job_in_a_gap_follows_the_dst_policy() -> None:
    spring = _first_change("Europe/London", forward=True)  # 01:00 GMT -> 02:00 BST
    midnight = spring - timedelta(hours=1)  # 00:00 GMT that night
    every = timedelta(minutes=90)  # 00:00, 01:30 (missing), 03:00
    shifted = interval(every, "Europe/London", anchor=midnight, dst=IntervalDst.WALL,
                       gap=DstGap.SHIFT)  # fmt: skip
    skipped = interval(every, "Europe/London", anchor=midnight, dst=IntervalDst.WALL)
    window = (midnight, midnight + timedelta(hours=3))
    shift_runs = compile_schedule(shifted, JOB, now=midnight).runs(*window)
    assert [r.instant - midnight for r in shift_runs] == [
        timedelta(0), timedelta(hours=1), timedelta(hours=2),
    ]  # fmt: skip
    assert shift_runs[1].note is not None
    assert "01:30 does not exist" in shift_runs[1].note
    skip_runs = compile_schedule(skipped, JOB, now=midnight).runs(*window, skipped=True)
    assert [(r.instant - midnight, r.skipped) for r in skip_runs] == [
        (timedelta(0), False), (timedelta(hours=1), True), (timedelta(hours=2), False),
    ]  # fmt: skip


def test_without_an_anchor_runs_are_aligned_to_the_epoch() -> None:
    now = datetime.now(UTC)
    quarter = compile_schedule(interval(timedelta(minutes=15)), JOB, now=now)
    runs = quarter.next_runs(now, 8)
    assert {r.instant.minute for r in runs} <= {0, 15, 30, 45}
    assert all(r.instant.second == r.instant.microsecond == 0 for r in runs)
    assert runs[0].instant - now < timedelta(minutes=15)
    ninety = compile_schedule(interval(timedelta(minutes=90)), JOB, now=now)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert all((r.instant - epoch) % timedelta(minutes=90) == timedelta(0)
               for r in ninety.next_runs(now, 20))  # fmt: skip


def test_an_anchor_sets_the_phase_past_or_future() -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    for anchor in (now - timedelta(days=400, seconds=7), now + timedelta(days=3, seconds=7)):
        plan = compile_schedule(interval(timedelta(hours=36), anchor=anchor), JOB, now=now)
        runs = plan.next_runs(now, 3)
        assert all((r.instant - anchor) % timedelta(hours=36) == timedelta(0) for r in runs)
        assert now <= runs[0].instant < now + timedelta(hours=36)
        before = plan.previous_runs(now, 2)
        assert before[-1].instant == runs[0].instant - timedelta(hours=36)


def test_previews_limit_and_bounds() -> None:
    now = datetime.now(UTC)
    start = now + timedelta(hours=1)
    end = start + timedelta(seconds=35)
    schedule = Schedule(ScheduleKind.INTERVAL, every=timedelta(seconds=10), starts_at=start,
                        ends_at=end)  # fmt: skip
    plan = compile_schedule(schedule, JOB, now=now)
    runs = plan.next_runs(now, 10)
    assert len(runs) == 3 or len(runs) == 4
    assert all(start <= r.instant <= end for r in runs)
    wall = compile_schedule(
        interval(timedelta(seconds=1), "Europe/London", dst=IntervalDst.WALL), JOB, now=now
    )
    assert len(wall.next_runs(now, 5)) == 5
    assert len(wall.previous_runs(now, 5)) == 5


def test_smear_must_be_shorter_than_the_real_spacing() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)  # fixed: the next ten years' transitions count
    compile_schedule(interval(timedelta(hours=1), smear=timedelta(minutes=59)), JOB, now=now)
    with pytest.raises(InvalidArgument) as refused:
        compile_schedule(interval(timedelta(hours=1), smear=timedelta(hours=1)), JOB, now=now)
    assert refused.value.field == "schedule.smear"
    # A 90-minute wall grid with fold `both` runs twice in London's repeated hour:
    # 01:30 BST then 01:30 GMT, one hour of real time apart.
    both = interval(timedelta(minutes=90), "Europe/London", dst=IntervalDst.WALL,
                    fold=DstFold.BOTH, smear=timedelta(minutes=70))  # fmt: skip
    with pytest.raises(InvalidArgument, match="across DST in Europe/London"):
        compile_schedule(both, JOB, now=now)
    first = interval(timedelta(minutes=90), "Europe/London", dst=IntervalDst.WALL,
                     fold=DstFold.FIRST, smear=timedelta(minutes=70))  # fmt: skip
    compile_schedule(first, JOB, now=now)


def test_real_spacing_equals_the_expanded_runs() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    for name in ZONES:
        for every in EVERIES:
            for fold in (DstFold.BOTH, DstFold.FIRST):
                schedule = interval(every, name, dst=IntervalDst.WALL, gap=DstGap.SHIFT,
                                    fold=fold)  # fmt: skip
                plan = compile_schedule(schedule, JOB, now=now)
                assert plan.interval is not None
                spacing = plan.interval.real_spacing(now, 1)
                shortest = every
                for change in reference.transitions(ZoneInfo(name), 2025, 2025):
                    runs = plan.runs(change - 2 * every - WINDOW, change + 2 * every + WINDOW)
                    for a, b in itertools.pairwise(runs):
                        shortest = min(shortest, b.instant - a.instant)
                assert spacing == shortest, (name, every, fold)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"every": timedelta(0)}, "schedule.every"),
        ({"every": timedelta(seconds=-5)}, "schedule.every"),
        ({"every": timedelta(milliseconds=999)}, "schedule.every"),
        ({"every": timedelta(days=366, seconds=1)}, "schedule.every"),
        ({"every": None}, "schedule.every"),
        ({"anchor": datetime(2030, 1, 1)}, "schedule.anchor"),
        ({"dst_gap": DstGap.SKIP}, "schedule.dst_gap"),
        ({"dst_fold": DstFold.BOTH}, "schedule.dst_fold"),
    ],
)
def test_bad_intervals_are_refused_naming_the_field(changes: dict[str, object], field: str) -> None:
    values: dict[str, object] = {"kind": ScheduleKind.INTERVAL, "every": timedelta(minutes=5)}
    values.update(changes)
    with pytest.raises(InvalidArgument) as refused:
        Schedule(**values)  # type: ignore[arg-type]
    assert refused.value.field == field


def test_interval_fields_are_refused_on_other_schedules() -> None:
    with pytest.raises(InvalidArgument) as refused:
        Schedule(ScheduleKind.CRON, cron="* * * * *", interval_dst=IntervalDst.WALL)
    assert refused.value.field == "schedule.interval_dst"
    with pytest.raises(InvalidArgument) as refused:
        Schedule(ScheduleKind.NOW, anchor=datetime.now(UTC))
    assert refused.value.field == "schedule.anchor"
    with pytest.raises(InvalidArgument) as refused:
        Schedule(ScheduleKind.CRON, cron="* * * * *", every=timedelta(minutes=1))
    assert refused.value.field == "schedule.every"
    Schedule(ScheduleKind.INTERVAL, every=timedelta(days=366))  # the longest allowed


def test_words() -> None:
    assert spoken(timedelta(minutes=90)) == "90 minutes"
    assert spoken(timedelta(hours=36)) == "36 hours"
    assert spoken(timedelta(seconds=15)) == "15 seconds"
    assert spoken(timedelta(days=1)) == "1 day"
    assert describe_interval(interval(timedelta(minutes=90))) == "Every 90 minutes of real time"
    anchored = interval(timedelta(days=1), "Europe/London", dst=IntervalDst.WALL,
                        anchor=datetime(2020, 7, 1, 8, tzinfo=UTC))  # fmt: skip
    assert describe_interval(anchored) == (
        "Every 1 day by the wall clock in Europe/London, from 2020-07-01 09:00"
    )
