"""Pauses, edits, misfires on takeover, the circuit breaker, overlap queue, the clock bound."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.helpers import at, create_job, tenant
from tests.integration.scheduler.scripted_executor import connected, fail
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.model.executions import ExecutionStatus, NewOccurrence
from wheel.model.ids import ExecutionKey
from wheel.model.jobs import MisfirePolicy, OverlapPolicy, Schedule, ScheduleKind
from wheel.store import Store


async def test_a_paused_job_is_not_dispatched_and_runs_after_resume(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    executor = await connected(node)
    owner = await tenant(store)
    job = await create_job(store, owner, at(1.0))
    await store.jobs.pause(owner.id, job.id)
    assert job.spec.schedule.at is not None
    when = job.spec.schedule.at
    # Past its instant plus a full catch-up interval: still not run.
    await asyncio.sleep((when - datetime.now(UTC)).total_seconds() + 1.5)
    assert executor.runs == []
    assert (await store.executions.get(owner.id, ExecutionKey(job.id, when))).status == "pending"
    await store.jobs.resume(owner.id, job.id)  # within the misfire grace: fire_once fires it
    await executor.wait_for(lambda: len(executor.accepted) == 1)
    assert executor.runs[0].execution_id == ExecutionKey(job.id, when).id
    await executor.stop()


async def test_an_edit_supersedes_loaded_occurrences_the_new_schedule_lacks(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    executor = await connected(node)
    owner = await tenant(store)
    job = await create_job(
        store, owner, Schedule(kind=ScheduleKind.CRON, cron="*/2 * * * * *"),
        overlap=OverlapPolicy.ALLOW, misfire_grace=timedelta(0),
    )  # fmt: skip
    await executor.wait_for(lambda: len(executor.accepted) >= 2)
    odd = Schedule(kind=ScheduleKind.CRON, cron="1-59/2 * * * * *")
    edited = await store.jobs.update(
        owner.id, job.id, job.version, dataclasses.replace(job.spec, schedule=odd)
    )
    edited_at = datetime.now(UTC)
    settled = datetime.now(UTC) + timedelta(seconds=2)  # the materialiser runs every second
    await executor.wait_for(lambda: sum(r.started > settled for r in executor.runs) >= 3, within=30)
    late_runs = [r.scheduled_for for r in executor.runs if r.started > settled]
    assert all(instant.second % 2 == 1 for instant in late_runs), late_runs
    superseded, _ = await store.executions.list(
        owner.id, job_id=job.id, statuses=[ExecutionStatus.SKIPPED],
        scheduled_after=edited_at, page_size=100,
    )  # fmt: skip
    assert superseded
    assert all(e.reason == "superseded" or "superseded" in (e.reason or "") for e in superseded)
    assert edited.version == job.version + 1
    await executor.stop()


async def test_a_node_taking_over_late_applies_the_misfire_policy(
    store: Store, start_node: NodeFactory
) -> None:
    owner = await tenant(store)
    every_5s = Schedule(kind=ScheduleKind.CRON, cron="*/5 * * * * *")
    jobs = {
        policy: await create_job(
            store, owner, every_5s, misfire=policy, misfire_grace=timedelta(seconds=1),
            overlap=OverlapPolicy.ALLOW,
        )
        for policy in (MisfirePolicy.SKIP, MisfirePolicy.FIRE_ONCE)
    }  # fmt: skip
    # Occurrences materialised before the cluster went down, all come due since.
    now = datetime.now(UTC).replace(microsecond=0)
    missed = [now - timedelta(seconds=s) for s in (30, 20, 10)]
    await store.occurrences.insert(
        [
            NewOccurrence(ExecutionKey(job.id, instant), owner.id, job.partition, 1, instant)
            for job in jobs.values()
            for instant in missed
        ]
    )
    node = await start_node()
    executor = await connected(node)
    await executor.wait_for(lambda: len(executor.accepted) >= 1)
    statuses = {
        policy: [
            (await store.executions.get(owner.id, ExecutionKey(job.id, instant))).status
            for instant in missed
        ]
        for policy, job in jobs.items()
    }
    assert statuses[MisfirePolicy.SKIP] == [ExecutionStatus.SKIPPED] * 3
    assert statuses[MisfirePolicy.FIRE_ONCE][:2] == [ExecutionStatus.SKIPPED] * 2
    # The latest missed run fires, unless a later run came due before it was claimed
    # (the executor connected late): then that one fires instead, as fire_once says.
    once = jobs[MisfirePolicy.FIRE_ONCE]
    prefix = f"{once.id}@"
    await executor.wait_for(lambda: any(r.execution_id.startswith(prefix) for r in executor.runs))
    first = min(r.scheduled_for for r in executor.runs if r.execution_id.startswith(prefix))
    if first != missed[-1]:
        latest = await store.executions.get(owner.id, ExecutionKey(once.id, missed[-1]))
        assert latest.status is ExecutionStatus.SKIPPED
        assert (latest.reason or "").endswith("a later run fires instead (policy fire_once)")
        assert first > missed[-1]
    await executor.stop()


async def test_the_breaker_parks_a_failing_task_and_probes_after_the_cooldown(
    store: Store, start_node: NodeFactory
) -> None:
    cooldown = 3.0
    node = await start_node(breaker_failures=2, breaker_cooldown_s=cooldown)
    executor = await connected(node, behaviour=fail)
    owner = await tenant(store)
    for n in range(6):  # one a second: the breaker sees each failure before the next fires
        await create_job(store, owner, at(1.0 + n), task_type="flaky", max_attempts=1)
    await executor.wait_for(lambda: len(executor.runs) >= 3, within=20)
    second, probe = executor.runs[1], executor.runs[2]
    assert probe.started - second.started >= timedelta(seconds=cooldown * 0.9), "parked"
    assert probe.started - probe.scheduled_for >= timedelta(seconds=1), "held back, then probed"
    assert node.engine is not None
    assert node.engine.breakers.open_task_types() == ["flaky"]
    await executor.stop()


async def test_overlap_queue_runs_one_queued_occurrence_after_the_running_one(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    finished: list[datetime] = []

    async def slow(_: pb.Dispatch) -> tuple[int, str]:
        await asyncio.sleep(2.5)  # outlasts two more occurrences
        finished.append(datetime.now(UTC))
        return pb.Result.OUTCOME_SUCCEEDED, ""

    executor = await connected(node, behaviour=slow)
    owner = await tenant(store)
    job = await create_job(
        store, owner, Schedule(kind=ScheduleKind.CRON, cron="* * * * * *"),
        overlap=OverlapPolicy.QUEUE, misfire_grace=timedelta(seconds=30),
    )  # fmt: skip
    await executor.wait_for(lambda: len(executor.runs) >= 2, within=30)
    first, second = executor.runs[0], executor.runs[1]
    assert second.started >= finished[0], "never two at once"
    assert second.scheduled_for == first.scheduled_for + timedelta(seconds=1), "the queued one"
    between, _ = await store.executions.list(
        owner.id, job_id=job.id, statuses=[ExecutionStatus.SKIPPED],
        scheduled_after=second.scheduled_for + timedelta(milliseconds=1),
        scheduled_before=second.started,
    )  # fmt: skip
    assert between, "runs beyond the one queued are skipped"
    assert all("policy queue" in (e.reason or "") for e in between)
    await executor.stop()


async def test_a_node_whose_clock_is_off_takes_no_partitions(
    start_node: NodeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="wheel.scheduler.node")
    node = await start_node(max_clock_offset_ms=0.000001)
    assert node.clock_offset_ms is not None
    assert not node.clock_fit.is_set()
    assert node.engine is not None
    assert node.engine.owned == {}
    assert any(r.msg == "node.clock_unfit" for r in caplog.records)
