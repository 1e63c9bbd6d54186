"""Runs that came due while every node was down are misfires, and say so."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.scripted_executor import connected
from wheel.api.server.registration import register_job
from wheel.model.executions import ExecutionStatus
from wheel.model.jobs import JobSpec, OverlapPolicy, Policies, Schedule, ScheduleKind
from wheel.store import Store

DOWN_S = 4.0
"""How long the cluster is down: the fault."""


async def test_runs_missed_while_the_cluster_was_down_are_misfires_not_overlaps(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node("node-a")
    executor = await connected(node)
    owner = await store.tenants.create("restarted")
    spec = JobSpec(
        "every second", "work", Schedule(kind=ScheduleKind.CRON, cron="* * * * * *"),
        policies=Policies(overlap=OverlapPolicy.SKIP),
    )  # fmt: skip
    job = (await register_job(store, owner.id, spec, partitions=node.config.partitions)).job
    await executor.wait_for(lambda: len(executor.accepted) >= 2)
    await executor.stop()
    await node.stop()
    stopped = datetime.now(UTC)
    await asyncio.sleep(DOWN_S)  # the outage itself
    restarted = datetime.now(UTC)
    again = await start_node("node-b")
    executor = await connected(again)
    await executor.wait_for(
        lambda: any(r.scheduled_for > restarted + timedelta(seconds=1) for r in executor.runs)
    )
    missed, _ = await store.executions.list(
        owner.id, job_id=job.id, scheduled_after=stopped, scheduled_before=restarted,
        page_size=100,
    )  # fmt: skip
    assert len(missed) >= 3
    states = sorted((e.key.scheduled_for, e.status, e.reason or "") for e in missed)
    fired = [s for s in states if s[1] is not ExecutionStatus.SKIPPED]
    assert len(fired) <= 1, f"fire_once fires at most the latest missed run: {states}"
    for _, status, reason in states:
        if status is ExecutionStatus.SKIPPED:
            assert reason.startswith("misfire"), f"a missed run is a misfire: {reason!r}"
            assert "overlap" not in reason
    await executor.stop()
