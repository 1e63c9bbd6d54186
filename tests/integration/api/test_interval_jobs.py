"""Interval jobs on a real node, through the wire API: the materialiser makes their runs,
they fire every N seconds on the epoch's grid, the overlap policy applies, previews and
explain speak of them, an edit re-plans them, and bad definitions name the field."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta

import grpc
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from tests.integration.api.explaining import V, explain
from tests.integration.api.helpers import Api, create, rpc_error
from tests.integration.scheduler.scripted_executor import connected
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel._proto.wheel.v1 import executor_pb2 as epb
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import JobId
from wheel.timestamps import to_datetime, to_timestamp

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def every(seconds: int, **fields: object) -> pb.Schedule:
    return pb.Schedule(every=pb.IntervalSchedule(every=Duration(seconds=seconds), **fields))  # type: ignore[arg-type]


async def test_an_interval_job_fires_every_n_seconds_and_is_explained(api: Api) -> None:
    a = api.alice
    executor = await connected(api.node)
    created = await a.jobs.CreateJob(
        create("pulse", every(2), preview=3, policies=pb.JobPolicies(misfire_grace=Duration())),
        metadata=a.metadata,
    )
    job = created.job
    assert job.schedule.WhichOneof("kind") == "every"
    previewed = [to_datetime(run.instant) for run in created.next_runs]
    assert len(previewed) == 3
    assert {(b - a) for a, b in itertools.pairwise(previewed)} == {timedelta(seconds=2)}
    assert all((p - EPOCH) % timedelta(seconds=2) == timedelta(0) for p in previewed)

    await executor.wait_for(
        lambda: len([r for r in executor.runs if r.execution_id.startswith(job.id)]) >= 3
    )
    mine = [r for r in executor.runs if r.execution_id.startswith(job.id)]
    instants = [run.scheduled_for for run in mine]
    assert instants == sorted(set(instants)), "in order, none twice"
    assert {(b - a) for a, b in itertools.pairwise(instants)} == {timedelta(seconds=2)}
    assert all((i - EPOCH) % timedelta(seconds=2) == timedelta(0) for i in instants)

    # Explain: a fired run, and an instant off the grid.
    fired = await _until_succeeded(api, job, instants[0])
    assert fired.execution_id
    off = await explain(a, job, instants[-1] + timedelta(seconds=1))
    assert off.verdict == V.NOT_AN_OCCURRENCE
    assert "every 2 seconds of real time" in off.summary
    assert f"the next is at {instants[-1] + timedelta(seconds=2):%Y-%m-%dT%H:%M:%S}" in (
        off.summary
    )

    # A preview of an anchored, wall-clock interval in a zone, without saving it.
    anchor = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=7)
    preview = await a.jobs.PreviewSchedule(
        apb.PreviewScheduleRequest(
            schedule=every(
                5400, anchor=to_timestamp(anchor), time_zone="Europe/London",
                interval_dst=pb.INTERVAL_DST_WALL,
            ),
            count=4,
        ),
        metadata=a.metadata,
    )  # fmt: skip
    assert [r.time_zone for r in preview.next_runs] == ["Europe/London"] * 4
    assert to_datetime(preview.next_runs[0].instant) == anchor

    # An edit to another interval re-plans the job: the runs made from it are on a 3 s grid.
    edited = job.__class__()
    edited.CopyFrom(job)
    edited.schedule.CopyFrom(every(3))
    updated = await a.jobs.UpdateJob(apb.UpdateJobRequest(job=edited), metadata=a.metadata)
    assert updated.schedule.every.every.seconds == 3
    since = len(executor.runs)
    await executor.wait_for(
        lambda: len([r for r in executor.runs[since:] if r.execution_id.startswith(job.id)]) >= 2
    )
    later = [r.scheduled_for for r in executor.runs[since:] if r.execution_id.startswith(job.id)]
    assert (later[-1] - EPOCH) % timedelta(seconds=3) == timedelta(0)
    await executor.stop()


async def _until_succeeded(api: Api, job: pb.Job, instant: datetime) -> apb.Explanation:
    """Explain until the run has succeeded: its result is recorded after the executor's."""
    async with asyncio.timeout(20):
        while True:
            found = await explain(api.alice, job, instant)
            if found.verdict == V.SUCCEEDED:
                return found
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await


async def test_the_overlap_policy_applies_to_interval_jobs(api: Api) -> None:
    a = api.alice

    async def slow(_: epb.Dispatch) -> tuple[int, str]:
        await asyncio.sleep(1.5)  # the task's work: outlasts the next run
        return epb.Result.OUTCOME_SUCCEEDED, ""

    executor = await connected(api.node, behaviour=slow)
    policies = pb.JobPolicies(overlap=pb.OVERLAP_SKIP, misfire_grace=Duration())
    job = (
        await a.jobs.CreateJob(create("busy", every(1), policies=policies), metadata=a.metadata)
    ).job
    await executor.wait_for(lambda: len(executor.accepted) >= 2, within=30)
    first, second = executor.runs[0], executor.runs[1]
    assert second.scheduled_for - first.scheduled_for >= timedelta(seconds=2)
    between, _ = await api.store.executions.list(
        a.tenant.id,
        job_id=JobId(job.id),
        scheduled_after=first.scheduled_for + timedelta(milliseconds=1),
        scheduled_before=second.scheduled_for,
    )
    skipped = [e for e in between if e.status is ExecutionStatus.SKIPPED]
    assert skipped, "the runs in between were recorded skipped"
    assert all(e.reason and "overlap" in e.reason for e in skipped)
    await executor.stop()


async def test_invalid_intervals_name_the_field(api: Api) -> None:
    a = api.alice
    cases = {
        "schedule.every.every": every(0),
        "schedule.every.anchor": every(60, anchor=Timestamp(seconds=-5)),
        "schedule.every.interval_dst": every(60, interval_dst=9),
        "schedule.every.dst.gap": every(60, dst=pb.DstPolicy(gap=pb.DstPolicy.GAP_SKIP)),
        "schedule.every.smear": every(60, smear=Duration(seconds=60)),
        "schedule.every.time_zone": every(60, time_zone="Mars/Olympus"),
    }
    over = pb.Schedule(every=pb.IntervalSchedule(every=Duration(seconds=366 * 86_400 + 1)))
    for field, schedule in [*cases.items(), ("schedule.every.every", over)]:
        error = await rpc_error(a.jobs.CreateJob(create(schedule=schedule), metadata=a.metadata))
        assert error.code() is grpc.StatusCode.INVALID_ARGUMENT, field
        assert dict(error.trailing_metadata() or ())["wheel-field"] == field
    listed = await a.jobs.ListJobs(apb.ListJobsRequest(), metadata=a.metadata)
    assert list(listed.jobs) == []
