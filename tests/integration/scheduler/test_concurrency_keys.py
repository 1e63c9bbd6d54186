"""A concurrency key's limit holds across jobs and nodes: two nodes, jobs of both nodes'
partitions sharing a key, made through the SDK; explain and the lists say why a run waits."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import UTC, datetime, timedelta

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.scripted_executor import connected
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.client import AsyncClient, Verdict
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import ExecutionKey, JobId, new_job_id, partition_of
from wheel.model.jobs import OverlapPolicy, Policies, Schedule, ScheduleKind
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

PER_NODE = 3
"""Jobs of each key on each node's partitions."""
LIMITS = {"billing": 1, "acme": 2}


async def split(first: SchedulerNode, second: SchedulerNode) -> None:
    assert first.engine is not None
    assert second.engine is not None
    async with asyncio.timeout(30):  # until the two have split the partitions between them
        while True:
            owned = len(first.engine.owned) + len(second.engine.owned)
            if owned == first.config.partitions and first.engine.owned and second.engine.owned:
                return
            await asyncio.sleep(0.05)  # ownership settles on its own, with no event for both


def job_ids(node: SchedulerNode, count: int) -> list[JobId]:
    """`count` new job ids whose partitions `node` owns."""
    assert node.engine is not None
    found: list[JobId] = []
    while len(found) < count:
        job_id = new_job_id()
        if partition_of(job_id, node.config.partitions) in node.engine.owned:
            found.append(job_id)
    return found


async def test_two_nodes_never_run_more_of_a_key_than_its_limit(
    store: Store, start_node: NodeFactory, token: str
) -> None:
    first = await start_node("node-a")
    second = await start_node("node-b")
    running: Counter[str] = Counter()
    most: Counter[str] = Counter()
    held: list[str] = []
    """The billing run kept running until explain has been asked about the others."""
    holding = asyncio.Event()
    release = asyncio.Event()

    async def work(dispatch: pb.Dispatch) -> tuple[int, str]:
        group = json.loads(dispatch.payload)["group"]
        running[group] += 1
        most[group] = max(most[group], running[group])
        try:
            if group == "billing" and not held:
                held.append(dispatch.execution_id)
                holding.set()
                await release.wait()
            else:
                await asyncio.sleep(0.2)  # the work itself: runs overlap unless held apart
        finally:
            running[group] -= 1
        return pb.Result.OUTCOME_SUCCEEDED, ""

    executors = [
        await connected(node, executor_id=f"ex-{node.node_id}", behaviour=work)
        for node in (first, second)
    ]
    await split(first, second)
    when = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
    at = Schedule(kind=ScheduleKind.AT, at=when)
    runs: dict[str, list[ExecutionKey]] = {"billing": [], "acme": []}
    async with AsyncClient(first.address, token=token) as client:
        for node in (first, second):
            for job_id in job_ids(node, PER_NODE):
                await client.create_job(
                    f"charge-{job_id}", "work", at, payload=b'{"group": "billing"}',
                    policies=Policies(overlap=OverlapPolicy.ALLOW, concurrency_key="billing",
                                      concurrency_limit=1),
                    job_id=job_id,
                )  # fmt: skip
                runs["billing"].append(ExecutionKey(job_id, when))
            for job_id in job_ids(node, PER_NODE):
                await client.create_job(
                    f"sync-{job_id}", "work", at,
                    payload=b'{"group": "acme", "customer": "acme"}',
                    policies=Policies(overlap=OverlapPolicy.ALLOW,
                                      concurrency_key_field="customer", concurrency_limit=2),
                    job_id=job_id,
                )  # fmt: skip
                runs["acme"].append(ExecutionKey(job_id, when))

        async with asyncio.timeout(30):
            await holding.wait()
        waiting = [k for k in runs["billing"] if k.id not in held]
        said = f"AT_KEY_LIMIT: key 'billing' has 1 of 1 running (run {held[0]})"
        async with asyncio.timeout(15):  # until it is due (and so waits for the key)
            while True:
                explained = await client.explain_execution(waiting[0].id)
                if explained.verdict not in (Verdict.WAITING, Verdict.QUEUED):
                    break
                await asyncio.sleep(0.1)  # a pending run's state, polled until it is due
        assert explained.verdict is Verdict.AT_KEY_LIMIT, explained.summary
        assert explained.summary == said
        assert (explained.concurrency_key, explained.concurrency_limit) == ("billing", 1)
        assert explained.key_holders == (held[0],)
        listed = await client.list_executions(job_id=str(waiting[0].job_id))
        (row,) = listed.items
        assert (row.waiting, row.waiting_detail, row.concurrency_key) == (
            "at key limit", said, "billing"
        )  # fmt: skip
        release.set()

        everything = runs["billing"] + runs["acme"]
        async with asyncio.timeout(60):
            while True:
                states = [(await client.get_execution(k.id)).status for k in everything]
                if all(s is ExecutionStatus.SUCCEEDED for s in states):
                    break
                await asyncio.sleep(0.2)  # results are recorded by the nodes, polled

    assert most["billing"] == 1, "one billing run at a time, whatever its job or node"
    assert 1 <= most["acme"] <= LIMITS["acme"]
    assert {e.executor_id for e in executors if e.runs} == {"ex-node-a", "ex-node-b"}, (
        "both nodes ran some"
    )
    async with store.pool.connection() as conn:
        cursor = await conn.execute("SELECT key, in_flight FROM concurrency_keys ORDER BY key")
        assert await cursor.fetchall() == [("acme", 0), ("billing", 0)]
    for executor in executors:
        await executor.stop()
