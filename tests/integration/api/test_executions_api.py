"""wheel.v1.Executions and wheel.v1.Cluster on a real node."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration

from tests.integration.api.helpers import Api, Caller
from tests.integration.scheduler.scripted_executor import connected, fail
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.executor.config import ExecutorConfig
from wheel.executor.executor import Executor
from wheel.executor.tasks import TaskRegistry
from wheel.local import LocalServices
from wheel.timestamps import to_timestamp


async def hourly_with_history(
    caller: Caller, hours: int, name: str = "hourly"
) -> tuple[pb.Job, list[str]]:
    """A cron job and `hours` backfilled runs (pending, firing now), newest first."""
    request = apb.CreateJobRequest(
        name=name,
        task_type="work",
        schedule=pb.Schedule(cron=pb.CronSchedule(expression="0 * * * *")),
    )
    job = (await caller.jobs.CreateJob(request, metadata=caller.metadata)).job
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    made = await caller.jobs.BackfillJob(
        apb.BackfillJobRequest(
            id=job.id, start=to_timestamp(end - timedelta(hours=hours)), end=to_timestamp(end)
        ),
        metadata=caller.metadata,
    )
    return job, list(reversed(made.created_ids))


async def test_list_filters_by_job_status_and_time_and_pages(api: Api) -> None:
    a = api.alice
    job, ids = await hourly_with_history(a, 5)
    other, _ = await hourly_with_history(a, 2, "also hourly")
    seen: list[str] = []
    token = ""
    while True:
        page = await a.executions.ListExecutions(
            apb.ListExecutionsRequest(job_id=job.id, page_size=2, page_token=token),
            metadata=a.metadata,
        )
        seen.extend(e.id for e in page.executions)
        token = page.next_page_token
        if not token:
            break
    assert seen == ids, "newest first, every run once"
    everything = await a.executions.ListExecutions(apb.ListExecutionsRequest(), metadata=a.metadata)
    assert len(everything.executions) == 7
    first = await a.executions.GetExecution(apb.ExecutionRef(id=ids[-1]), metadata=a.metadata)
    window = await a.executions.ListExecutions(
        apb.ListExecutionsRequest(
            job_id=job.id,
            scheduled_after=first.scheduled_for,
            scheduled_before=to_timestamp(first.scheduled_for.ToDatetime(UTC) + timedelta(hours=2)),
        ),
        metadata=a.metadata,
    )
    assert [e.id for e in window.executions] == ids[-2:]
    await a.executions.CancelExecution(apb.ExecutionRef(id=ids[0]), metadata=a.metadata)
    cancelled = await a.executions.ListExecutions(
        apb.ListExecutionsRequest(statuses=[pb.EXECUTION_STATUS_CANCELLED]), metadata=a.metadata
    )
    assert [e.id for e in cancelled.executions] == [ids[0]]
    assert other.id != job.id


async def test_cancel_is_for_pending_runs_and_is_idempotent(api: Api) -> None:
    a = api.alice
    _, ids = await hourly_with_history(a, 1)
    ref = apb.ExecutionRef(id=ids[0])
    for _ in range(2):
        cancelled = await a.executions.CancelExecution(ref, metadata=a.metadata)
        assert cancelled.status == pb.EXECUTION_STATUS_CANCELLED
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await a.executions.RetryExecution(ref, metadata=a.metadata)
    assert refused.value.code() is grpc.StatusCode.FAILED_PRECONDITION


async def test_a_dead_run_retried_by_hand_runs_again_with_every_attempt_kept(api: Api) -> None:
    a = api.alice
    failing = await connected(api.node, behaviour=fail)
    at = to_timestamp(datetime.now(UTC) + timedelta(seconds=0.3))
    retry = pb.RetryPolicy(max_attempts=1)
    request = apb.CreateJobRequest(
        name="fails", task_type="work", schedule=pb.Schedule(at=at),
        policies=pb.JobPolicies(retry=retry, timeout=Duration(seconds=30)),
    )  # fmt: skip
    job = (await a.jobs.CreateJob(request, metadata=a.metadata)).job
    await failing.wait_for(lambda: len(failing.accepted) >= 1)  # acknowledged once recorded
    listing = apb.ListExecutionsRequest(job_id=job.id)
    (run,) = (await a.executions.ListExecutions(listing, metadata=a.metadata)).executions
    assert run.status == pb.EXECUTION_STATUS_DEAD
    await failing.stop()
    succeeding = await connected(api.node, executor_id="second")
    retried = await a.executions.RetryExecution(apb.ExecutionRef(id=run.id), metadata=a.metadata)
    assert retried.status == pb.EXECUTION_STATUS_PENDING
    await succeeding.wait_for(lambda: len(succeeding.accepted) >= 1)
    done = await a.executions.GetExecution(apb.ExecutionRef(id=run.id), metadata=a.metadata)
    assert done.status == pb.EXECUTION_STATUS_SUCCEEDED
    assert [(t.number, t.outcome, t.executor_id) for t in done.attempts] == [
        (1, "failed", "scripted"),
        (2, "succeeded", "second"),
    ]
    assert done.attempts[0].error == "RuntimeError: boom"
    assert done.attempts[1].fence > done.attempts[0].fence
    await succeeding.stop()


async def test_cluster_lists_nodes_partitions_and_executors(
    api: Api, local_services: LocalServices
) -> None:
    c = api.alice
    registry = TaskRegistry()
    registry.register("work", lambda context: None, pool="batch")
    executor = Executor(
        ExecutorConfig(
            executor_id="lister",
            cluster=api.node.config.cluster,
            etcd_endpoint=local_services.etcd.endpoint,
            pools={"batch": 3},
            token=(await api.store.tenants.create_executor_token("lister"))[1],
        ),
        registry,
    )
    await executor.start()
    try:
        nodes = await c.cluster.ListNodes(apb.ListNodesRequest(), metadata=c.metadata)
        assert [(n.node_id, n.address, n.partitions) for n in nodes.nodes] == [
            ("node-a", api.node.address, 8)
        ]
        partitions = await c.cluster.ListPartitions(
            apb.ListPartitionsRequest(), metadata=c.metadata
        )
        assert [p.partition for p in partitions.partitions] == list(range(8))
        assert {p.node_id for p in partitions.partitions} == {"node-a"}
        assert all(p.epoch > 0 for p in partitions.partitions)
        listed = await c.cluster.ListExecutors(apb.ListExecutorsRequest(), metadata=c.metadata)
        assert [(e.executor_id, list(e.pools), list(e.task_types), e.capacity)
                for e in listed.executors] == [("lister", ["batch"], ["work"], 3)]  # fmt: skip
    finally:
        await executor.stop()
