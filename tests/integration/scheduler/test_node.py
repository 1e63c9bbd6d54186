"""A scheduler node end to end in-process: real etcd and Postgres, a scripted executor."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.helpers import PARTITIONS, at, create_job, status, tenant
from tests.integration.scheduler.scripted_executor import ScriptedExecutor, connected, fail
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import ExecutionKey
from wheel.model.jobs import OverlapPolicy, Schedule, ScheduleKind
from wheel.store import Store


async def test_a_one_off_job_fires_at_its_instant_exactly_once(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    executor = await connected(node)
    owner = await tenant(store)
    job = await create_job(store, owner, at(1.5))
    assert job.spec.schedule.at is not None
    when = job.spec.schedule.at
    await executor.wait_for(lambda: len(executor.accepted) == 1)
    (run,) = executor.runs
    assert run.execution_id == ExecutionKey(job.id, when).id
    assert run.start_at == when
    assert run.started >= when, "never early"
    assert await status(store, job, when) is ExecutionStatus.SUCCEEDED
    await executor.stop()


async def test_a_cron_job_fires_every_occurrence_in_order(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    executor = await connected(node)
    owner = await tenant(store)
    await create_job(
        store,
        owner,
        Schedule(kind=ScheduleKind.CRON, cron="* * * * * *"),
        misfire_grace=timedelta(0),
    )
    await executor.wait_for(lambda: len(executor.accepted) >= 6)
    instants = [run.scheduled_for for run in executor.runs]
    assert instants == sorted(instants)
    assert len(set(instants)) == len(instants), "no occurrence twice"
    gaps = {(b - a) for a, b in itertools.pairwise(instants)}
    assert gaps == {timedelta(seconds=1)}, "no occurrence missed"
    await executor.stop()


async def test_failures_retry_with_backoff_then_go_dead(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    executor = await connected(node, behaviour=fail)
    owner = await tenant(store)
    job = await create_job(
        store, owner, at(0.5), max_attempts=3,
        backoff_base=timedelta(milliseconds=200), backoff_cap=timedelta(milliseconds=400),
    )  # fmt: skip
    await executor.wait_for(lambda: len(executor.accepted) == 3)
    assert [run.attempt for run in executor.runs] == [1, 2, 3]
    fences = [run.fence for run in executor.runs]
    assert fences == sorted(set(fences)), "every dispatch a higher fence"
    assert len({run.execution_id for run in executor.runs}) == 1, "one idempotency key"
    assert job.spec.schedule.at is not None
    assert await status(store, job, job.spec.schedule.at) is ExecutionStatus.DEAD
    await executor.stop()


async def test_a_failed_non_idempotent_job_waits_for_review(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    executor = await connected(node, behaviour=fail)
    owner = await tenant(store)
    job = await create_job(store, owner, at(0.5), idempotent=False)
    await executor.wait_for(lambda: len(executor.accepted) == 1)
    assert job.spec.schedule.at is not None
    assert await status(store, job, job.spec.schedule.at) is ExecutionStatus.NEEDS_REVIEW
    assert len(executor.runs) == 1
    await executor.stop()


async def test_an_expired_lease_is_retried_with_a_higher_fence_and_the_late_result_refused(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    _, token = await store.tenants.create_executor_token("test", executor_ids=("*",))
    silent = ScriptedExecutor(
        node.address, executor_id="silent", send_results=False, heartbeat_every_s=None,
        token=token,
    )  # fmt: skip
    await silent.start()
    await node.ready.wait()
    owner = await tenant(store)
    job = await create_job(store, owner, at(0.5))
    await silent.wait_for(lambda: len(silent.runs) == 1)
    first = silent.runs[0]
    await silent.stop()  # no result, no heartbeat: the lease (2 s) runs out
    healthy = ScriptedExecutor(node.address, executor_id="healthy", token=token)
    await healthy.start()
    await healthy.wait_for(lambda: len(healthy.accepted) == 1)
    (second,) = healthy.runs
    assert second.execution_id == first.execution_id
    assert second.fence > first.fence
    assert second.attempt == 2
    # The first executor's result arrives at last: refused as stale.
    healthy._outbox.put_nowait(
        pb.ExecutorMessage(
            result=pb.Result(
                execution_id=first.execution_id,
                fence=first.fence,
                outcome=pb.Result.OUTCOME_SUCCEEDED,
            )
        )
    )
    await healthy.wait_for(lambda: (first.execution_id, first.fence) in healthy.stale)
    assert job.spec.schedule.at is not None
    assert await status(store, job, job.spec.schedule.at) is ExecutionStatus.SUCCEEDED
    await healthy.stop()


async def test_heartbeats_keep_a_long_run_leased(store: Store, start_node: NodeFactory) -> None:
    node = await start_node()
    release = asyncio.Event()

    async def slow(_: pb.Dispatch) -> tuple[int, str]:
        await release.wait()
        return pb.Result.OUTCOME_SUCCEEDED, ""

    executor = await connected(node, behaviour=slow)
    owner = await tenant(store)
    job = await create_job(store, owner, at(0.5))
    await executor.wait_for(lambda: len(executor.runs) == 1)
    # The executor heartbeats every 0.5 s; outlast 2.5 leases (2 s each).
    await asyncio.sleep(5)
    release.set()
    await executor.wait_for(lambda: len(executor.accepted) == 1)
    assert len(executor.runs) == 1, "never re-dispatched while heartbeating"
    assert job.spec.schedule.at is not None
    assert await status(store, job, job.spec.schedule.at) is ExecutionStatus.SUCCEEDED
    await executor.stop()


async def test_one_tenants_spike_does_not_hold_back_another_tenant(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node(claim_batch=50)
    noisy, quiet = await tenant(store), await tenant(store)
    when = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    noisy_jobs = [
        await create_job(store, noisy, Schedule(kind=ScheduleKind.AT, at=when)) for _ in range(400)
    ]
    quiet_job = await create_job(store, quiet, Schedule(kind=ScheduleKind.AT, at=when))
    # Connected only now: with credit earlier, claim-ahead could hand noisy runs out before
    # the quiet job existed (creating 400 jobs one by one outlasts 3 s on a loaded machine).
    executor = await connected(node, capacity=20)
    await executor.wait_for(lambda: len(executor.accepted) == len(noisy_jobs) + 1, within=60)
    order = [run.execution_id for run in executor.runs]
    position = order.index(ExecutionKey(quiet_job.id, when).id)
    # Round-robin across tenants: the quiet tenant's one occurrence goes in the first claim.
    assert position < 2 * 20, f"quiet tenant's occurrence ran {position}th of {len(order)}"
    await executor.stop()


async def test_overlap_skip_records_runs_that_would_overlap(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()

    async def slow(_: pb.Dispatch) -> tuple[int, str]:
        await asyncio.sleep(2.5)  # the task's work: outlasts two more occurrences
        return pb.Result.OUTCOME_SUCCEEDED, ""

    executor = await connected(node, behaviour=slow)
    owner = await tenant(store)
    job = await create_job(
        store, owner, Schedule(kind=ScheduleKind.CRON, cron="* * * * * *"),
        overlap=OverlapPolicy.SKIP, misfire_grace=timedelta(0),
    )  # fmt: skip
    await executor.wait_for(lambda: len(executor.accepted) >= 2, within=30)
    first, second = executor.runs[0], executor.runs[1]
    assert second.scheduled_for - first.scheduled_for >= timedelta(seconds=2)
    between, _ = await store.executions.list(
        owner.id,
        job_id=job.id,
        scheduled_after=first.scheduled_for + timedelta(milliseconds=1),
        scheduled_before=second.scheduled_for,
    )
    skipped = [e for e in between if e.status is ExecutionStatus.SKIPPED]
    assert skipped, "the runs in between were recorded skipped"
    assert all(e.reason and "overlap" in e.reason for e in skipped)
    await executor.stop()


async def test_a_graceful_stop_hands_partitions_over_and_work_still_fires(
    store: Store, start_node: NodeFactory
) -> None:
    first = await start_node("node-a")
    second = await start_node("node-b")
    await first.ready.wait()
    await second.ready.wait()
    _, token = await store.tenants.create_executor_token("test", executor_ids=("*",))
    executors = [
        ScriptedExecutor(n.address, executor_id=n.node_id, token=token) for n in (first, second)
    ]
    for executor in executors:
        await executor.start()
    await first.stop()
    assert second.engine is not None
    owner = await tenant(store)
    jobs = [await create_job(store, owner, at(1.0)) for _ in range(20)]
    survivor = executors[1]
    await survivor.wait_for(lambda: len(survivor.accepted) == len(jobs))
    assert len(second.engine.owned) == PARTITIONS
    for executor in executors:
        await executor.stop()
