"""Compiled schedules: validation, bounds, one-offs, smear, and previews with notes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from wheel.errors import InvalidArgument
from wheel.model.jobs import DstFold, DstGap, Schedule, ScheduleKind
from wheel.schedule import compile_schedule, preview, smear_offset

JOB = uuid.UUID(int=3)
NOW = datetime(2027, 3, 20, tzinfo=UTC)


def cron_schedule(expression: str, zone: str = "UTC", **fields: object) -> Schedule:
    return Schedule(ScheduleKind.CRON, cron=expression, time_zone=zone, **fields)  # type: ignore[arg-type]


def test_unknown_zone_is_named() -> None:
    with pytest.raises(InvalidArgument) as caught:
        compile_schedule(cron_schedule("0 9 * * *", "Europe/Londn"), JOB, now=NOW)
    assert (caught.value.field, caught.value.reason) == (
        "schedule.time_zone",
        "unknown time zone 'Europe/Londn'",
    )


def test_an_expression_that_never_runs_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="matches no day in the next 10 years"):
        compile_schedule(cron_schedule("0 0 30 2 *"), JOB, now=NOW)
    leap = compile_schedule(cron_schedule("0 0 29 2 *"), JOB, now=NOW)
    assert leap.next_runs(NOW, 1)[0].instant == datetime(2028, 2, 29, tzinfo=UTC)


def test_bounds_are_inclusive() -> None:
    plan = compile_schedule(
        cron_schedule(
            "0 * * * *",
            starts_at=datetime(2027, 3, 21, 5, tzinfo=UTC),
            ends_at=datetime(2027, 3, 21, 8, tzinfo=UTC),
        ),
        JOB,
        now=NOW,
    )
    runs = plan.runs(NOW, NOW + timedelta(days=3))
    assert [r.instant.hour for r in runs] == [5, 6, 7, 8]
    assert len(plan.next_runs(NOW, 10)) == 4


def test_one_offs_run_once() -> None:
    at = datetime(2027, 5, 1, 12, tzinfo=UTC)
    plan = compile_schedule(Schedule(ScheduleKind.AT, at=at), JOB, now=NOW)
    assert [r.instant for r in plan.next_runs(NOW, 5)] == [at]
    assert plan.runs(at + timedelta(seconds=1), at + timedelta(days=1)) == []
    now_plan = compile_schedule(Schedule(ScheduleKind.NOW), JOB, now=NOW)
    assert [r.instant for r in now_plan.next_runs(NOW, 5)] == [NOW]


def test_smear_is_stable_within_the_window_and_per_job() -> None:
    window = timedelta(minutes=30)
    offsets = {smear_offset(uuid.UUID(int=n), window) for n in range(500)}
    assert all(timedelta(0) <= o < window for o in offsets)
    assert len(offsets) > 450
    plan = compile_schedule(cron_schedule("0 * * * *", smear=window), JOB, now=NOW)
    fires = [plan.fire_at(r.instant) for r in plan.next_runs(NOW, 5)]
    assert {f - f.replace(minute=0, second=0, microsecond=0) for f in fires} == {plan.offset}


def test_smear_may_not_reach_the_next_period() -> None:
    with pytest.raises(InvalidArgument) as caught:
        compile_schedule(cron_schedule("*/15 * * * *", smear=timedelta(minutes=15)), JOB, now=NOW)
    assert caught.value.field == "schedule.smear"
    compile_schedule(cron_schedule("*/15 * * * *", smear=timedelta(minutes=14)), JOB, now=NOW)


def test_preview_explains_a_gap_a_fold_and_smear() -> None:
    london = compile_schedule(cron_schedule("30 1 * * *", "Europe/London"), JOB, now=NOW)
    spring = preview(london, datetime(2027, 3, 27, 12, tzinfo=UTC), 2)
    assert [(r.wall_time, r.note) for r in spring] == [
        (
            "2027-03-28T02:00:00+01:00",
            "01:30 does not exist on 2027-03-28 in Europe/London; runs at 02:00 BST",
        ),
        ("2027-03-29T01:30:00+01:00", None),
    ]
    autumn = preview(london, datetime(2027, 10, 30, 12, tzinfo=UTC), 1)
    assert (
        autumn[0].note
        == "01:30 happens twice on 2027-10-31 in Europe/London; runs once, at 01:30 BST"
    )
    assert autumn[0].scheduled_for == datetime(2027, 10, 31, 0, 30, tzinfo=UTC)


def test_preview_of_a_skipped_run_says_so_on_the_next_run() -> None:
    plan = compile_schedule(
        cron_schedule("30 1 * * *", "Europe/London", dst_gap=DstGap.SKIP, dst_fold=DstFold.LAST),
        JOB,
        now=NOW,
    )
    runs = preview(plan, datetime(2027, 3, 27, 12, tzinfo=UTC), 1)
    assert runs[0].wall_time == "2027-03-29T01:30:00+01:00"
    assert runs[0].note == "01:30 does not exist on 2027-03-28 in Europe/London; no run"
    autumn = preview(plan, datetime(2027, 10, 30, 12, tzinfo=UTC), 1)
    assert autumn[0].scheduled_for == datetime(2027, 10, 31, 1, 30, tzinfo=UTC)
    smeared = compile_schedule(
        cron_schedule("0 9 * * *", smear=timedelta(minutes=10)), JOB, now=NOW
    )
    (run,) = preview(smeared, NOW, 1)
    assert run.fire_at == run.scheduled_for + smeared.offset
    assert run.note is not None
    assert run.note.startswith("smeared by +")


def test_a_schedule_compiles_on_29_february() -> None:
    leap_day = datetime(2028, 2, 29, 12, tzinfo=UTC)
    plan = compile_schedule(cron_schedule("0 9 * * *"), JOB, now=leap_day)
    assert plan.next_runs(leap_day, 1)[0].instant == datetime(2028, 3, 1, 9, tzinfo=UTC)


def test_a_dense_schedule_far_ahead_previews_from_its_start() -> None:
    start = NOW + timedelta(days=365)
    plan = compile_schedule(cron_schedule("* * * * * *", starts_at=start), JOB, now=NOW)
    assert [r.instant for r in plan.next_runs(NOW, 3)] == [
        start,
        start + timedelta(seconds=1),
        start + timedelta(seconds=2),
    ]
