"""`wheel.every(...)`: the SDK's interval schedule, validated before anything is sent."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

import wheel
from wheel.errors import InvalidArgument
from wheel.model.jobs import DstFold, IntervalDst, ScheduleKind


def test_every_builds_an_interval_schedule() -> None:
    anchor = datetime(2026, 1, 5, 9, tzinfo=UTC)
    schedule = wheel.every(timedelta(days=1), "Europe/London", anchor=anchor, dst="wall",
                           dst_fold="both")  # fmt: skip
    assert schedule.kind is ScheduleKind.INTERVAL
    assert (schedule.every, schedule.anchor) == (timedelta(days=1), anchor)
    assert (schedule.interval_dst, schedule.dst_fold) == (IntervalDst.WALL, DstFold.BOTH)
    assert wheel.every(timedelta(seconds=15)).interval_dst is IntervalDst.ELAPSED


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: wheel.every(timedelta(0)), "schedule.every"),
        (lambda: wheel.every(timedelta(seconds=-1)), "schedule.every"),
        (lambda: wheel.every(timedelta(days=367)), "schedule.every"),
        (lambda: wheel.every(timedelta(hours=1), dst="sideways"), "schedule.interval_dst"),
        (lambda: wheel.every(timedelta(hours=1), anchor=datetime(2026, 1, 1)), "schedule.anchor"),
        (lambda: wheel.every(timedelta(hours=1), dst_gap="skip"), "schedule.dst_gap"),
    ],
)
def test_bad_intervals_are_refused_naming_the_field(call: Callable[[], object], field: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        call()
    assert refused.value.field == field
