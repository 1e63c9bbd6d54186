"""Heartbeats have connections of their own: a lease is kept while claims and records wait."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.helpers import at, create_job, tenant
from tests.integration.scheduler.scripted_executor import connected
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.model.ids import ExecutionKey
from wheel.store import Store


async def lease_until(store: Store, key: ExecutionKey) -> datetime | None:
    async with store.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT lease_until FROM executions WHERE job_id = %s AND scheduled_for = %s",
                (key.job_id, key.scheduled_for),
            )
        ).fetchone()
    return None if row is None else row[0]


async def test_a_heartbeat_keeps_its_lease_while_every_other_connection_is_taken(
    start_node: NodeFactory, store: Store
) -> None:
    node = await start_node(pool_size=2, lease_s=2.0, heartbeat_interval_s=0.5)
    running = asyncio.Event()

    async def long(dispatch: pb.Dispatch) -> tuple[int, str]:
        running.set()
        await asyncio.Event().wait()  # runs until the test ends; heartbeats every 0.5 s
        return pb.Result.OUTCOME_SUCCEEDED, ""

    executor = await connected(node, behaviour=long, heartbeat_every_s=0.5)
    job = await create_job(store, await tenant(store), at(0.5))
    assert job.spec.schedule.at is not None
    key = ExecutionKey(job.id, job.spec.schedule.at)
    await running.wait()
    async with contextlib.AsyncExitStack() as taken:
        for _ in range(2):  # every connection claims, records and loads use
            await taken.enter_async_context(node.store.pool.connection())
        before = await lease_until(store, key)
        assert before is not None
        later = before
        async with asyncio.timeout(10):
            while later is not None and later <= before:
                later = await lease_until(store, key)
                await asyncio.sleep(0.2)  # polling a row in Postgres: there is no event
        assert later is not None
        assert later > before, "extended while the pool was taken"
    await executor.stop()
