"""A job definition survives the trip to protobuf and back; bad fields are named as sent."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given
from hypothesis import strategies as st

from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api import convert
from wheel.errors import InvalidArgument
from wheel.model import jobs as mj

instants = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(8999, 1, 1), timezones=st.just(UTC)
)
# Whole milliseconds: what the API keeps (finer durations are cut to them).
durations = st.integers(0, 365 * 86_400_000).map(lambda ms: timedelta(milliseconds=ms))


@st.composite
def schedules(draw: st.DrawFn) -> mj.Schedule:
    kind = draw(st.sampled_from(mj.ScheduleKind))
    if kind is mj.ScheduleKind.NOW:
        return mj.Schedule(kind)
    if kind is mj.ScheduleKind.AT:
        return mj.Schedule(kind, at=draw(instants))
    start = draw(st.none() | instants)
    end = draw(st.none() | instants.filter(lambda e: start is None or e > start))
    if kind is mj.ScheduleKind.INTERVAL:
        wall = draw(st.booleans())
        return mj.Schedule(
            kind,
            every=draw(durations.filter(lambda d: d >= mj.MIN_INTERVAL)),
            anchor=draw(st.none() | instants),
            interval_dst=mj.IntervalDst.WALL if wall else mj.IntervalDst.ELAPSED,
            time_zone=draw(st.sampled_from(["UTC", "Europe/London", "Australia/Lord_Howe"])),
            starts_at=start,
            ends_at=end,
            smear=draw(durations),
            dst_gap=draw(st.sampled_from(mj.DstGap)) if wall else mj.DstGap.DEFAULT,
            dst_fold=draw(st.sampled_from(mj.DstFold)) if wall else mj.DstFold.DEFAULT,
        )
    return mj.Schedule(
        kind,
        cron=draw(st.sampled_from(["* * * * *", "30 1 * * *", "H H * * 1-5", "@hourly"])),
        time_zone=draw(st.sampled_from(["UTC", "Europe/London", "America/New_York"])),
        starts_at=start,
        ends_at=end,
        smear=draw(durations),
        dst_gap=draw(st.sampled_from(mj.DstGap)),
        dst_fold=draw(st.sampled_from(mj.DstFold)),
    )


@st.composite
def policies(draw: st.DrawFn) -> mj.Policies:
    base = draw(durations)
    return mj.Policies(
        max_attempts=draw(st.integers(1, mj.MAX_ATTEMPTS)),
        backoff_base=base,
        backoff_cap=base + draw(durations),
        idempotent=draw(st.booleans()),
        misfire=draw(st.sampled_from(mj.MisfirePolicy)),
        misfire_grace=draw(durations),
        misfire_replay_cap=draw(st.integers(1, 10_000)),
        overlap=draw(st.sampled_from(mj.OverlapPolicy)),
        timeout=draw(durations.filter(lambda d: d > timedelta(0))),
        priority=draw(st.integers(-(2**31), 2**31 - 1)),
        pool=draw(st.sampled_from(["default", "batch", "gpu"])),
    )


@given(schedules(), policies(), st.binary(max_size=64))
def test_a_definition_round_trips(
    schedule: mj.Schedule, chosen: mj.Policies, payload: bytes
) -> None:
    spec = mj.JobSpec("name", "task", schedule, payload, chosen)
    back = convert.spec_from(
        spec.name, spec.task_type, spec.payload,
        convert.schedule_to(spec.schedule), convert.policies_to(spec.policies),
    )  # fmt: skip
    assert back == spec


def test_durations_are_cut_to_whole_milliseconds() -> None:
    assert convert.duration(Duration(seconds=1, nanos=1_500_999), "d") == timedelta(
        seconds=1, milliseconds=1
    )
    with pytest.raises(InvalidArgument, match="must be positive"):
        convert.policies_from(pb.JobPolicies(timeout=Duration(nanos=500_000)))


def test_unset_policies_take_the_design_defaults() -> None:
    assert convert.policies_from(pb.JobPolicies()) == mj.Policies()


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (pb.Schedule(at=Timestamp(seconds=-(10**12))), "schedule.at"),
        (pb.Schedule(at=Timestamp(seconds=0, nanos=-1)), "schedule.at"),
        (pb.Schedule(cron=pb.CronSchedule(expression="")), "schedule.cron.expression"),
        (
            pb.Schedule(cron=pb.CronSchedule(expression="* * * * *", smear=Duration(seconds=-1))),
            "schedule.cron.smear",
        ),
        (
            pb.Schedule(cron=pb.CronSchedule(expression="* * * * *", dst=pb.DstPolicy(gap=42))),  # type: ignore[arg-type]
            "schedule.cron.dst.gap",
        ),
        (pb.Schedule(), "schedule"),
    ],
)
def test_a_bad_schedule_names_the_field_as_sent(message: pb.Schedule, field: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        convert.schedule_from(message)
    assert caught.value.field == field


def test_an_unknown_policy_number_is_named() -> None:
    with pytest.raises(InvalidArgument) as caught:
        convert.policies_from(pb.JobPolicies(overlap=9))  # type: ignore[arg-type]
    assert caught.value.field == "policies.overlap"


def test_a_job_ref_is_an_id_or_a_name_and_nothing_else() -> None:
    job_id = uuid.uuid4()
    assert convert.job_ref(str(job_id)) == job_id
    assert convert.job_ref("nightly report") == "nightly report"
    for bad, reason in (("", "is required"), ("x" * 201, "longer than 200"),
                        ("a\x00b", "control characters")):  # fmt: skip
        with pytest.raises(InvalidArgument, match=reason) as caught:
            convert.job_ref(bad, "job_id")
        assert caught.value.field == "job_id"
