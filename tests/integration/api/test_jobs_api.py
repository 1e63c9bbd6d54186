"""wheel.v1.Jobs on a real node: what each RPC does, and that it is idempotent where promised."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, time, timedelta

import grpc
from google.protobuf.duration_pb2 import Duration

from tests.integration.api.helpers import Api, create, cron, next_spring_forward, rpc_error
from tests.integration.scheduler.scripted_executor import connected
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel._proto.wheel.v1 import executor_pb2 as epb
from wheel.model.ids import ExecutionKey, JobId
from wheel.timestamps import to_datetime, to_timestamp


async def test_create_answers_the_job_and_its_next_runs_with_dst_notes(api: Api) -> None:
    a = api.alice
    gap = next_spring_forward("Europe/London", datetime.now(UTC) + timedelta(days=3))
    start = datetime.combine(gap - timedelta(days=2), time(0), UTC)
    created = await a.jobs.CreateJob(
        create(preview=3, schedule=cron("30 1 * * *", "Europe/London", start=to_timestamp(start))),
        metadata=a.metadata,
    )
    assert created.job.version == 1
    assert created.job.status == pb.JOB_STATUS_ACTIVE
    wall = [run.wall_time for run in created.next_runs]
    # The day London goes forward, 01:30 does not exist; the default rule runs it at 02:00 BST.
    assert wall == [
        f"{gap - timedelta(days=2)}T01:30:00+00:00",
        f"{gap - timedelta(days=1)}T01:30:00+00:00",
        f"{gap}T02:00:00+01:00",
    ]
    assert created.next_runs[2].note
    assert "does not exist" in created.next_runs[2].note
    fetched = await a.jobs.GetJob(apb.GetJobRequest(id=created.job.id), metadata=a.metadata)
    assert fetched == created.job


async def test_a_repeated_create_with_the_same_job_id_answers_the_first_job(api: Api) -> None:
    a = api.alice
    job_id = str(uuid.uuid4())
    first = await a.jobs.CreateJob(create(job_id=job_id), metadata=a.metadata)
    again = await a.jobs.CreateJob(create(job_id=job_id), metadata=a.metadata)
    assert again.job == first.job
    listed = await a.jobs.ListJobs(apb.ListJobsRequest(), metadata=a.metadata)
    assert [j.id for j in listed.jobs] == [job_id]
    clash = await rpc_error(a.jobs.CreateJob(create("other", job_id=job_id), metadata=a.metadata))
    assert clash.code() is grpc.StatusCode.ALREADY_EXISTS
    taken = await rpc_error(
        api.bob.jobs.CreateJob(create(job_id=job_id), metadata=api.bob.metadata)
    )
    assert taken.code() is grpc.StatusCode.ALREADY_EXISTS


async def test_list_pages_through_every_job_once(api: Api) -> None:
    a = api.alice
    made = {
        (await a.jobs.CreateJob(create(f"job {n}"), metadata=a.metadata)).job.id for n in range(7)
    }
    seen: list[str] = []
    token = ""
    while True:
        page = await a.jobs.ListJobs(
            apb.ListJobsRequest(page_size=3, page_token=token), metadata=a.metadata
        )
        seen.extend(j.id for j in page.jobs)
        token = page.next_page_token
        if not token:
            break
    assert sorted(seen) == sorted(made)


async def test_lists_leave_payloads_out_and_get_has_them(api: Api) -> None:
    a = api.alice
    job = (await a.jobs.CreateJob(create(payload=b"x" * 100_000), metadata=a.metadata)).job
    (listed,) = (await a.jobs.ListJobs(apb.ListJobsRequest(), metadata=a.metadata)).jobs
    assert listed.id == job.id
    assert listed.payload == b""
    fetched = await a.jobs.GetJob(apb.GetJobRequest(id=job.id), metadata=a.metadata)
    assert fetched.payload == b"x" * 100_000


async def test_update_needs_the_current_version(api: Api) -> None:
    a = api.alice
    job = (await a.jobs.CreateJob(create(), metadata=a.metadata)).job
    edited = pb.Job()
    edited.CopyFrom(job)
    edited.schedule.cron.expression = "45 2 * * *"
    updated = await a.jobs.UpdateJob(apb.UpdateJobRequest(job=edited), metadata=a.metadata)
    assert updated.version == 2
    assert updated.schedule.cron.expression == "45 2 * * *"
    stale = await rpc_error(a.jobs.UpdateJob(apb.UpdateJobRequest(job=edited), metadata=a.metadata))
    assert stale.code() is grpc.StatusCode.ABORTED
    assert "version 2, not 1" in (stale.details() or "")


async def test_a_one_off_schedule_cannot_be_edited(api: Api) -> None:
    a = api.alice
    soon = to_timestamp(datetime.now(UTC) + timedelta(hours=1))
    job = (await a.jobs.CreateJob(create(schedule=pb.Schedule(at=soon)), metadata=a.metadata)).job
    edited = pb.Job()
    edited.CopyFrom(job)
    edited.schedule.at.seconds += 60
    refused = await rpc_error(
        a.jobs.UpdateJob(apb.UpdateJobRequest(job=edited), metadata=a.metadata)
    )
    assert refused.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert dict(refused.trailing_metadata() or ())["wheel-field"] == "job.schedule"


async def test_pause_resume_and_delete_are_idempotent(api: Api) -> None:
    a = api.alice
    job = (await a.jobs.CreateJob(create(), metadata=a.metadata)).job
    ref = apb.JobRef(id=job.id)
    for _ in range(2):
        assert (await a.jobs.PauseJob(ref, metadata=a.metadata)).status == pb.JOB_STATUS_PAUSED
    for _ in range(2):
        assert (await a.jobs.ResumeJob(ref, metadata=a.metadata)).status == pb.JOB_STATUS_ACTIVE
    for _ in range(2):
        assert (await a.jobs.DeleteJob(ref, metadata=a.metadata)).status == pb.JOB_STATUS_DELETED
    refused = await rpc_error(a.jobs.ResumeJob(ref, metadata=a.metadata))
    assert refused.code() is grpc.StatusCode.FAILED_PRECONDITION


async def test_preview_resolves_a_schedule_without_saving_it(api: Api) -> None:
    a = api.alice
    after = to_timestamp(datetime(2027, 10, 30, 12, tzinfo=UTC))
    shown = await a.jobs.PreviewSchedule(
        apb.PreviewScheduleRequest(
            schedule=cron("30 1 * * *", "Europe/London"), count=2, after=after
        ),
        metadata=a.metadata,
    )
    # 31 October 2027: 01:30 happens twice in London; the default rule runs the first.
    assert [r.wall_time for r in shown.next_runs] == [
        "2027-10-31T01:30:00+01:00",
        "2027-11-01T01:30:00+00:00",
    ]
    listed = await a.jobs.ListJobs(apb.ListJobsRequest(), metadata=a.metadata)
    assert list(listed.jobs) == []


async def test_trigger_makes_one_manual_run_per_instant(api: Api) -> None:
    a = api.alice
    job = (await a.jobs.CreateJob(create(), metadata=a.metadata)).job
    when = to_timestamp(datetime.now(UTC).replace(microsecond=123456))
    first = await a.jobs.TriggerJob(apb.TriggerJobRequest(id=job.id, at=when), metadata=a.metadata)
    again = await a.jobs.TriggerJob(apb.TriggerJobRequest(id=job.id, at=when), metadata=a.metadata)
    assert first.id == again.id == ExecutionKey(JobId(uuid.UUID(job.id)), to_datetime(when)).id
    assert first.trigger == "manual"
    await a.jobs.PauseJob(apb.JobRef(id=job.id), metadata=a.metadata)
    paused = await rpc_error(
        a.jobs.TriggerJob(apb.TriggerJobRequest(id=job.id), metadata=a.metadata)
    )
    assert paused.code() is grpc.StatusCode.FAILED_PRECONDITION


async def test_backfill_makes_the_runs_the_schedule_would_have_made_once(api: Api) -> None:
    a = api.alice
    job = (await a.jobs.CreateJob(create(schedule=cron("0 * * * *")), metadata=a.metadata)).job
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=5)
    request = apb.BackfillJobRequest(
        id=job.id, start=to_timestamp(start), end=to_timestamp(start + timedelta(hours=3))
    )
    made = await a.jobs.BackfillJob(request, metadata=a.metadata)
    job_id = JobId(uuid.UUID(job.id))
    expected = [ExecutionKey(job_id, start + timedelta(hours=h)).id for h in range(3)]
    assert list(made.created_ids) == expected
    assert list(made.existing_ids) == []
    again = await a.jobs.BackfillJob(request, metadata=a.metadata)
    assert list(again.created_ids) == []
    assert list(again.existing_ids) == expected
    run = await a.executions.GetExecution(apb.ExecutionRef(id=expected[0]), metadata=a.metadata)
    assert run.trigger == "backfill"


async def test_backfill_refuses_the_future_and_huge_ranges(api: Api) -> None:
    a = api.alice
    job = (await a.jobs.CreateJob(create(schedule=cron("* * * * * *")), metadata=a.metadata)).job
    now = datetime.now(UTC)
    future = await rpc_error(a.jobs.BackfillJob(apb.BackfillJobRequest(
        id=job.id, start=to_timestamp(now - timedelta(hours=1)),
        end=to_timestamp(now + timedelta(hours=1))), metadata=a.metadata))  # fmt: skip
    assert dict(future.trailing_metadata() or ())["wheel-field"] == "end"
    huge = await rpc_error(a.jobs.BackfillJob(apb.BackfillJobRequest(
        id=job.id, start=to_timestamp(now - timedelta(days=1)),
        end=to_timestamp(now - timedelta(hours=1))), metadata=a.metadata))  # fmt: skip
    assert huge.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "more than 10000 runs" in (huge.details() or "")
    ancient = await rpc_error(a.jobs.BackfillJob(apb.BackfillJobRequest(
        id=job.id, start=to_timestamp(now - timedelta(days=31)),
        end=to_timestamp(now - timedelta(days=30, hours=23))), metadata=a.metadata))  # fmt: skip
    assert (ancient.details() or "").startswith("start: older than the cluster's 30-day retention")
    far = await rpc_error(a.jobs.TriggerJob(apb.TriggerJobRequest(
        id=job.id, at=to_timestamp(now + timedelta(days=400))), metadata=a.metadata))  # fmt: skip
    assert dict(far.trailing_metadata() or ())["wheel-field"] == "at"
    listed = await a.executions.ListExecutions(apb.ListExecutionsRequest(), metadata=a.metadata)
    assert list(listed.executions) == [], "a refused backfill writes nothing"


async def test_invalid_definitions_name_the_field(api: Api) -> None:
    a = api.alice
    cases = {
        "schedule.cron.expression": create(schedule=cron("61 * * * *")),
        "schedule.cron.time_zone": create(schedule=cron("* * * * *", "Mars/Olympus")),
        "schedule": apb.CreateJobRequest(name="x", task_type="t"),
        "policies.retry.max_attempts": create(
            policies=pb.JobPolicies(retry=pb.RetryPolicy(max_attempts=1000))
        ),
        "policies.timeout": create(policies=pb.JobPolicies(timeout=Duration(seconds=-1))),
        "name": create(name=""),
        "preview": create(preview=1000),
    }
    for field, request in cases.items():
        error = await rpc_error(a.jobs.CreateJob(request, metadata=a.metadata))
        assert error.code() is grpc.StatusCode.INVALID_ARGUMENT, field
        assert dict(error.trailing_metadata() or ())["wheel-field"] == field
        assert (error.details() or "").startswith(f"{field}: ")
    listed = await a.jobs.ListJobs(apb.ListJobsRequest(), metadata=a.metadata)
    assert list(listed.jobs) == []


async def test_backfilled_and_triggered_runs_wait_for_each_other_instead_of_being_skipped(
    api: Api,
) -> None:
    a = api.alice
    running: list[str] = []
    overlapped: list[str] = []

    async def one_at_a_time(dispatch: epb.Dispatch) -> tuple[int, str]:
        if running:
            overlapped.append(dispatch.execution_id)
        running.append(dispatch.execution_id)
        await asyncio.sleep(0.2)  # long enough that the next run is due meanwhile
        running.remove(dispatch.execution_id)
        return epb.Result.OUTCOME_SUCCEEDED, ""

    executor = await connected(api.node, behaviour=one_at_a_time)
    job = (await a.jobs.CreateJob(create(schedule=cron("0 * * * *")), metadata=a.metadata)).job
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=4)
    request = apb.BackfillJobRequest(
        id=job.id, start=to_timestamp(start), end=to_timestamp(start + timedelta(hours=4))
    )
    made = await a.jobs.BackfillJob(request, metadata=a.metadata)
    manual = await a.jobs.TriggerJob(apb.TriggerJobRequest(id=job.id), metadata=a.metadata)
    wanted = {*made.created_ids, manual.id}
    await executor.wait_for(lambda: {run for run, _ in executor.accepted} >= wanted)
    listed = await a.executions.ListExecutions(
        apb.ListExecutionsRequest(job_id=job.id), metadata=a.metadata
    )
    statuses = {e.id: e.status for e in listed.executions if e.id in wanted}
    assert statuses == dict.fromkeys(wanted, pb.EXECUTION_STATUS_SUCCEEDED), "none skipped"
    assert overlapped == [], "one at a time: the job's overlap policy is skip"
    await executor.stop()


async def test_a_retry_is_not_skipped_for_a_manual_run_waiting_behind_it(api: Api) -> None:
    a = api.alice
    job_id = str(uuid.uuid4())
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
    scheduled = ExecutionKey(JobId(uuid.UUID(job_id)), at).id
    tries: list[str] = []

    async def first_try_fails(dispatch: epb.Dispatch) -> tuple[int, str]:
        tries.append(dispatch.execution_id)
        await asyncio.sleep(0.3)  # the manual run is triggered meanwhile
        if tries == [scheduled]:
            return epb.Result.OUTCOME_FAILED, "RuntimeError: first try"
        return epb.Result.OUTCOME_SUCCEEDED, ""

    executor = await connected(api.node, behaviour=first_try_fails)
    retry = pb.RetryPolicy(max_attempts=3, backoff_base=Duration(nanos=200_000_000))
    request = create(schedule=pb.Schedule(at=to_timestamp(at)), job_id=job_id,
                     policies=pb.JobPolicies(retry=retry))  # fmt: skip
    await a.jobs.CreateJob(request, metadata=a.metadata)
    await executor.wait_for(lambda: len(executor.runs) == 1)
    manual = await a.jobs.TriggerJob(apb.TriggerJobRequest(id=job_id), metadata=a.metadata)
    await executor.wait_for(lambda: len(executor.accepted) == 3)
    assert tries == [scheduled, scheduled, manual.id], "the retry first, then the manual run"
    for ident in (scheduled, manual.id):
        run = await a.executions.GetExecution(apb.ExecutionRef(id=ident), metadata=a.metadata)
        assert run.status == pb.EXECUTION_STATUS_SUCCEEDED
    await executor.stop()


async def test_a_job_nobody_can_run_is_created_with_a_warning_until_an_executor_serves_it(
    api: Api,
) -> None:
    a = api.alice
    created = await a.jobs.CreateJob(
        create(name="typo", schedule=pb.Schedule(now=pb.RunNow()), task_type="exmaple.hello"),
        metadata=a.metadata,
    )
    assert created.job.id, "created all the same: executors may come later"
    assert list(created.warnings) == [
        "no executor is connected: task type 'exmaple.hello' has nobody to run it"
    ]
    executor = await connected(api.node, executor_id="runs-it", task_types=("exmaple.hello",))
    ref = apb.GetJobRequest(id=created.job.id)
    async with asyncio.timeout(20):
        while True:
            if not (await a.jobs.GetJob(ref, metadata=a.metadata)).warnings:
                break
            await asyncio.sleep(0.1)  # the nodes publish their executors about every second
    await executor.wait_for(lambda: len(executor.accepted) == 1)
    await executor.stop()
