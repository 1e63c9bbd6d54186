"""ExplainExecution on a real node: the path an occurrence took, or why it did not run."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import grpc
from google.protobuf.duration_pb2 import Duration

from tests.integration.api.explaining import V, explain, one_off, until_verdict
from tests.integration.api.helpers import Api, Caller
from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.scripted_executor import connected, fail
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api.server.registration import register_job
from wheel.model.executions import NewOccurrence
from wheel.model.ids import ExecutionKey, JobId
from wheel.model.jobs import JobSpec, MisfirePolicy, Policies, Schedule, ScheduleKind
from wheel.timestamps import to_timestamp


async def test_a_run_that_succeeded_shows_its_whole_path(api: Api) -> None:
    executor = await connected(api.node)
    job = await one_off(api.alice, 0.5)
    found = await until_verdict(api.alice, job, V.SUCCEEDED)
    what = [step.what for step in found.steps]
    assert what[0] == "materialised"
    assert "claimed" in what
    assert what[-1] == "succeeded"
    claimed = next(s for s in found.steps if s.what == "claimed")
    assert "node-a" in claimed.detail
    assert "fence 1" in claimed.detail
    assert found.execution.status == pb.EXECUTION_STATUS_SUCCEEDED
    key = ExecutionKey(JobId(uuid.UUID(job.id)), job.schedule.at.ToDatetime(UTC))
    assert found.execution_id == key.id
    await executor.stop()


async def test_a_run_that_died_shows_every_attempt(api: Api) -> None:
    executor = await connected(api.node, behaviour=fail)
    retry = pb.RetryPolicy(max_attempts=2, backoff_base=Duration(), backoff_cap=Duration())
    job = await one_off(api.alice, 0.3, retry=retry)
    found = await until_verdict(api.alice, job, V.DEAD)
    attempts = [s for s in found.steps if s.what.startswith("attempt")]
    assert [s.what for s in attempts] == ["attempt 1", "attempt 2"]
    assert all("boom" in s.detail for s in attempts)
    assert "failed all 2 attempts" in found.summary
    await executor.stop()


async def test_a_due_run_names_the_one_reason_it_is_not_claimed(api: Api) -> None:
    """With nothing connected, then with executors that run other task types, then paused:
    each verdict names what holds now, not a list of what might."""
    job = await one_off(api.alice, -0.5, task_type="exmaple.hello")
    found = await until_verdict(api.alice, job, V.NO_EXECUTOR)
    assert "no executor is connected to node-a" in found.summary
    partition = next(s for s in found.steps if s.what == "partition")
    assert "held by node node-a" in partition.detail
    others = await connected(api.node, executor_id="others", task_types=("example.hello", "x"))
    found = await until_verdict(api.alice, job, V.UNSERVED)
    assert (
        "no connected executor serves task type 'exmaple.hello'; "
        "connected executors serve: example.hello, x"
    ) in found.summary
    await api.alice.jobs.PauseJob(apb.JobRef(id=job.id), metadata=api.alice.metadata)
    assert (await explain(api.alice, job)).verdict == V.PAUSED
    execution = await api.store.executions.get(
        api.alice.tenant.id, ExecutionKey.parse(found.execution_id)
    )
    assert (execution.status.value, execution.attempt, execution.attempts) == ("pending", 0, ())
    await others.stop()


async def test_a_run_behind_a_running_one_and_a_tenant_at_its_cap_say_so(api: Api) -> None:
    release = asyncio.Event()

    async def hold(_: object) -> tuple[int, str]:
        await release.wait()
        return 1, ""  # OUTCOME_SUCCEEDED

    executor = await connected(api.node, behaviour=hold)  # type: ignore[arg-type]
    a = api.alice
    every_second = pb.Schedule(cron=pb.CronSchedule(expression="* * * * * *"))
    request = apb.CreateJobRequest(
        name="queued", task_type="work", schedule=every_second,
        policies=pb.JobPolicies(overlap=pb.OVERLAP_QUEUE),
    )  # fmt: skip
    job = (await a.jobs.CreateJob(request, metadata=a.metadata)).job
    await executor.wait_for(lambda: len(executor.runs) == 1)
    running = executor.runs[0].execution_id
    async with asyncio.timeout(20):
        while True:
            listing = apb.ListExecutionsRequest(
                job_id=job.id,
                statuses=[pb.EXECUTION_STATUS_PENDING],
                scheduled_before=to_timestamp(datetime.now(UTC)),
            )
            page = await a.executions.ListExecutions(listing, metadata=a.metadata)
            due = [e for e in page.executions if e.fire_at.ToDatetime(UTC) < datetime.now(UTC)]
            if due:
                break
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await
    request_explain = apb.ExplainExecutionRequest(execution_id=due[0].id)
    behind = await a.executions.ExplainExecution(request_explain, metadata=a.metadata)
    assert behind.verdict == V.BEHIND_RUNNING
    assert f"waiting for run {running}" in behind.summary
    assert "overlap policy is queue" in behind.summary

    capped = await api.store.tenants.create("capped", max_in_flight=1)
    _, token = await api.store.tenants.create_token(capped.id, "t")
    c = Caller(capped, token, a.jobs, a.executions, a.cluster)
    first = await one_off(c, 0.2)
    await executor.wait_for(lambda: len(executor.runs) == 2)
    second = await one_off(c, -0.5)
    found = await until_verdict(c, second, V.AT_TENANT_CAP)
    assert "its cap (max_in_flight 1)" in found.summary
    release.set()
    await until_verdict(c, second, V.SUCCEEDED)
    assert (await explain(c, first)).verdict == V.SUCCEEDED
    await executor.stop()


async def test_a_future_run_is_waiting(api: Api) -> None:
    job = await one_off(api.alice, 3600)
    found = await explain(api.alice, job)
    assert found.verdict == V.WAITING
    assert found.summary.startswith("fires at")


async def test_instants_without_a_run_say_why(api: Api) -> None:
    a = api.alice
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    schedule = pb.Schedule(cron=pb.CronSchedule(expression="0 * * * *", start=to_timestamp(start)))
    request = apb.CreateJobRequest(name="hourly", task_type="work", schedule=schedule)
    job = (await a.jobs.CreateJob(request, metadata=a.metadata)).job
    off_schedule = await explain(a, job, start + timedelta(minutes=30))
    assert off_schedule.verdict == V.NOT_AN_OCCURRENCE
    assert "the next is at" in off_schedule.summary
    before = await explain(a, job, start - timedelta(hours=2))
    assert before.verdict == V.OUTSIDE_BOUNDS
    far = await explain(a, job, start + timedelta(days=30))
    assert far.verdict == V.NOT_MATERIALISED
    assert "not materialised yet" in far.summary
    assert not far.HasField("execution")


async def test_a_run_missed_while_no_node_ran_is_skipped_by_misfire(
    api: Api, start_node: NodeFactory
) -> None:
    # Made while the cluster was down: a second node's takeover applies the policy.
    owner = api.alice.tenant
    instant = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)
    spec = JobSpec(
        name="missed",
        task_type="work",
        schedule=Schedule(ScheduleKind.CRON, cron="* * * * * *"),
        policies=Policies(misfire=MisfirePolicy.SKIP),
    )
    job = (await register_job(api.store, owner.id, spec, partitions=8)).job
    await api.node.stop()
    await api.store.occurrences.insert(
        [NewOccurrence(ExecutionKey(job.id, instant), owner.id, job.partition, 1, instant)]
    )
    node = await start_node("node-b")
    await node.ready.wait()
    async with __import__("grpc").aio.insecure_channel(node.address) as channel:
        executions = __import__(
            "wheel._proto.wheel.v1.api_pb2_grpc", fromlist=["x"]
        ).ExecutionsStub(channel)
        request = apb.ExplainExecutionRequest(execution_id=ExecutionKey(job.id, instant).id)
        found = await executions.ExplainExecution(request, metadata=api.alice.metadata)
    assert found.verdict == V.SKIPPED_MISFIRE
    assert "policy skip" in found.summary


async def test_a_parked_run_names_the_open_breaker(api: Api, start_node: NodeFactory) -> None:
    node = await start_node("node-b", breaker_failures=1, breaker_cooldown_s=600.0)
    await api.node.stop()  # node-b takes every partition
    await node.ready.wait()
    async with grpc.aio.insecure_channel(node.address) as channel:
        a = api.alice.on(channel)
        executor = await connected(node, behaviour=fail)
        retry = pb.RetryPolicy(max_attempts=3, backoff_base=Duration(), backoff_cap=Duration())
        job = await one_off(a, 0.3, task_type="flaky", retry=retry)
        found = await until_verdict(a, job, V.PARKED)
        assert "'flaky' is open on node-b" in found.summary
        await executor.stop()


async def test_a_run_whose_only_executor_is_held_back_says_so(
    api: Api, start_node: NodeFactory
) -> None:
    """Its executor let a lease lapse in silence and answers no probe: the run is not
    waiting for capacity (the executor holds credit), it waits for that executor. (A 1 s
    heartbeat interval: the lease, 2 s, lapses before the executor has been silent for the
    four intervals that would have it let go.)"""
    node = await start_node("node-b", heartbeat_interval_s=1.0)
    await api.node.stop()  # node-b takes every partition
    await node.ready.wait()
    hung = asyncio.Event()

    async def first_hangs(_: object) -> tuple[int, str]:
        if not hung.is_set():
            hung.set()
            await asyncio.Event().wait()  # silent for good: no heartbeat, no result
        return 1, ""  # OUTCOME_SUCCEEDED

    async with grpc.aio.insecure_channel(node.address) as channel:
        a = api.alice.on(channel)
        executor = await connected(node, behaviour=first_hangs, heartbeat_every_s=None,  # type: ignore[arg-type]
                                   answers_pings=False)  # fmt: skip
        once = pb.RetryPolicy(max_attempts=1, backoff_base=Duration(), backoff_cap=Duration())
        await one_off(a, 0.2, retry=once)
        await hung.wait()
        await executor.wait_for(lambda: bool(node.engine.links.held_back()))  # its lease lapsed
        waiting = await one_off(a, -0.5)
        found = await until_verdict(a, waiting, V.NO_EXECUTOR)
        assert "every executor on node-b that serves it is held back" in found.summary
        assert "scripted (since " in found.summary
        executor.answers_pings = True
        await until_verdict(a, waiting, V.SUCCEEDED)
        await executor.stop()
