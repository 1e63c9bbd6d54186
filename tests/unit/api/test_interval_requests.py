"""Interval schedules in requests: read both ways, and refused naming the field as sent."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api import convert
from wheel.errors import InvalidArgument
from wheel.model import jobs as mj
from wheel.schedule import compile_schedule


def _every(**fields: object) -> pb.Schedule:
    values: dict[str, object] = {"every": Duration(seconds=5400)}
    values.update(fields)
    return pb.Schedule(every=pb.IntervalSchedule(**values))  # type: ignore[arg-type]


def test_an_interval_is_read_with_its_defaults() -> None:
    schedule = convert.schedule_from(_every())
    assert schedule.kind is mj.ScheduleKind.INTERVAL
    assert schedule.every == timedelta(minutes=90)
    assert schedule.anchor is None
    assert schedule.interval_dst is mj.IntervalDst.ELAPSED
    assert schedule.time_zone == "UTC"
    assert convert.schedule_from(convert.schedule_to(schedule)) == schedule


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (pb.Schedule(every=pb.IntervalSchedule()), "schedule.every.every"),
        (_every(every=Duration(seconds=0)), "schedule.every.every"),
        (_every(every=Duration(seconds=-60)), "schedule.every.every"),
        (_every(every=Duration(nanos=500_000_000)), "schedule.every.every"),
        (_every(every=Duration(seconds=366 * 86_400 + 1)), "schedule.every.every"),
        (_every(anchor=Timestamp(seconds=1, nanos=-1)), "schedule.every.anchor"),
        (_every(anchor=Timestamp(seconds=-86_400)), "schedule.every.anchor"),
        (_every(interval_dst=7), "schedule.every.interval_dst"),
        (_every(dst=pb.DstPolicy(gap=pb.DstPolicy.GAP_SKIP)), "schedule.every.dst.gap"),
        (_every(dst=pb.DstPolicy(fold=9)), "schedule.every.dst.fold"),
        (_every(start=Timestamp(seconds=100), end=Timestamp(seconds=50)), "schedule.every.end"),
        (_every(smear=Duration(seconds=-1)), "schedule.every.smear"),
    ],
)
def test_bad_intervals_name_the_field_as_sent(message: pb.Schedule, field: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        convert.schedule_from(message)
    assert refused.value.field == field


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (_every(time_zone="Mars/Olympus"), "schedule.every.time_zone"),
        (_every(smear=Duration(seconds=5400)), "schedule.every.smear"),
    ],
)
def test_what_the_plan_refuses_names_the_interval_field(message: pb.Schedule, field: str) -> None:
    schedule = convert.schedule_from(message)
    with pytest.raises(InvalidArgument) as refused, convert.request_fields(schedule=schedule):
        compile_schedule(schedule, uuid.uuid4(), now=datetime.now(UTC))
    assert refused.value.field == field
    assert convert.field_as_sent("schedule.smear") == "schedule.cron.smear"  # cron's own
