"""A tenant's max_in_flight caps its runs across every node, not per node."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.scripted_executor import connected
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.api.server.registration import register_job
from wheel.model.ids import new_job_id, partition_of
from wheel.model.jobs import JobSpec, OverlapPolicy, Policies, Schedule, ScheduleKind
from wheel.store import Store

CAP = 2
JOBS = 8


async def test_two_nodes_never_run_more_of_a_tenant_than_its_cap(
    store: Store, start_node: NodeFactory
) -> None:
    first = await start_node("node-a")
    second = await start_node("node-b")
    running = 0
    most = 0
    changed = asyncio.Event()

    async def count(_: pb.Dispatch) -> tuple[int, str]:
        nonlocal running, most
        running += 1
        most = max(most, running)
        changed.set()
        await asyncio.sleep(0.3)  # the work itself: runs overlap only if the cap lets them
        running -= 1
        return pb.Result.OUTCOME_SUCCEEDED, ""

    executors = [
        await connected(node, executor_id=f"ex-{node.node_id}", behaviour=count)
        for node in (first, second)
    ]
    owner = await store.tenants.create("capped", max_in_flight=CAP)
    when = (datetime.now(UTC) + timedelta(seconds=1.5)).replace(microsecond=0)
    assert first.engine is not None
    assert second.engine is not None
    count_of = first.config.partitions
    async with asyncio.timeout(30):  # until the two have split the partitions between them
        while True:
            split = len(first.engine.owned) + len(second.engine.owned) == count_of
            if split and first.engine.owned and second.engine.owned:
                break
            await asyncio.sleep(0.05)  # ownership settles on its own, with no event for both
    for owned in (first.engine.owned, second.engine.owned):  # half the jobs on each node
        ids = (new_job_id() for _ in iter(int, 1))
        for n, job_id in enumerate(i for i in ids if partition_of(i, count_of) in owned):
            if n == JOBS // 2:
                break
            spec = JobSpec(
                f"job-{job_id}", "work", Schedule(kind=ScheduleKind.AT, at=when),
                policies=Policies(overlap=OverlapPolicy.ALLOW),
            )  # fmt: skip
            await register_job(store, owner.id, spec, partitions=count_of, job_id=job_id)
    async with asyncio.timeout(60):
        while sum(len(e.accepted) for e in executors) < JOBS:
            changed.clear()
            waits = [asyncio.ensure_future(e.changed.wait()) for e in executors]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for wait in waits:
                wait.cancel()
    assert most <= CAP, f"{most} of the tenant's runs ran at once; its cap is {CAP}"
    assert most == CAP, "and the cap was used"
    assert {e.executor_id for e in executors if e.runs} == {"ex-node-a", "ex-node-b"}, (
        "both nodes ran some"
    )
    loaded = await store.tenants.load(owner.id)
    assert loaded is not None
    assert loaded.in_flight == 0
    for executor in executors:
        await executor.stop()
