"""Writes whose commit happened but whose answer was lost, as a failover loses them.

A proxy between the store and Postgres lets each statement reach the server and
commit, then cuts the connection before the answer comes back (`lost_answers`).
Every write path must then be safe to repeat: a repeated claim takes nothing and
the run keeps its one fence; a repeated result is refused and recorded once; a
repeated create with the same job id returns the job the first one made.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.integration.store import factories as make
from tests.integration.store.lost_answers import LossyProxy
from wheel.api.server.registration import register_jobs
from wheel.errors import WheelError
from wheel.model.executions import AttemptResult, ExecutionStatus, Outcome
from wheel.model.ids import ExecutionKey, JobId, PartitionId
from wheel.model.jobs import JobSpec, Policies, Schedule, ScheduleKind
from wheel.store import Store
from wheel.store.occurrences import ExecutorBinding

EPOCHS = {PartitionId(3): 100}
EX1 = ExecutorBinding("ex-1", "instance-1")


@pytest.fixture
async def lossy(database_dsn: str) -> AsyncIterator[tuple[LossyProxy, Store]]:
    """The proxy, and a store whose connections go through it."""
    direct = conninfo_to_dict(database_dsn)
    async with LossyProxy.running(str(direct["host"]), int(direct["port"])) as proxy:
        through = await Store.open(
            make_conninfo(database_dsn, host="127.0.0.1", port=str(proxy.port)),
            min_size=1, max_size=2,
        )  # fmt: skip
        try:
            yield proxy, through
        finally:
            await through.close()


async def _row(store: Store, key: ExecutionKey) -> tuple[Any, ...]:
    async with store.pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT status::text, fence, attempt,"
            " (SELECT count(*) FROM attempts a WHERE a.job_id = e.job_id"
            "  AND a.scheduled_for = e.scheduled_for)"
            " FROM executions e WHERE job_id = %s AND scheduled_for = %s",
            (key.job_id, key.scheduled_for),
        )
        row = await cursor.fetchone()
    assert row is not None
    return tuple(row)


async def _pending(store: Store) -> ExecutionKey:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=3)
    at = make.soon()
    await store.occurrences.insert([make.occurrence(job, at)])
    await store.occurrences.set_epochs(EPOCHS, node_id="node-a")
    return ExecutionKey(job.id, at)


async def test_a_claim_whose_answer_was_lost_is_not_claimed_again_and_keeps_its_fence(
    store: Store, lossy: tuple[LossyProxy, Store]
) -> None:
    proxy, through = lossy
    key = await _pending(store)
    proxy.lose_answer(b"wheel_claim")
    with pytest.raises(WheelError):
        await through.occurrences.claim([key], EPOCHS, lease_s=30, executors=[EX1])
    assert proxy.lost.is_set(), "the claim committed and its answer was lost"
    assert (await _row(store, key))[:2] == ("dispatched", 1)
    again = await through.occurrences.claim([key], EPOCHS, lease_s=30, executors=[EX1])
    assert again == [], "repeated, it takes nothing"
    assert (await _row(store, key))[:2] == ("dispatched", 1), "one claim, one fence"


async def test_a_result_whose_answer_was_lost_is_recorded_once(
    store: Store, lossy: tuple[LossyProxy, Store]
) -> None:
    proxy, through = lossy
    key = await _pending(store)
    (claimed,) = await store.occurrences.claim([key], EPOCHS, lease_s=30, executors=[EX1])
    done = AttemptResult(key, claimed.fence, Outcome.SUCCEEDED, executor_id=EX1.executor_id,
                         executor_instance=EX1.instance)  # fmt: skip
    proxy.lose_answer(b"wheel_record_attempts")
    with pytest.raises(WheelError):
        await through.occurrences.record_results([done])
    assert proxy.lost.is_set()
    assert await _row(store, key) == ("succeeded", 1, 1, 1)
    again = await through.occurrences.record_results([done])
    assert again.recorded == []
    assert [(s.current_fence, s.status) for s in again.stale] == [(1, ExecutionStatus.SUCCEEDED)]
    assert await _row(store, key) == ("succeeded", 1, 1, 1), "one attempt row, one result"


async def test_a_create_whose_answer_was_lost_returns_the_first_job_when_repeated(
    store: Store, lossy: tuple[LossyProxy, Store]
) -> None:
    proxy, through = lossy
    owner = await make.tenant(store)
    spec = JobSpec(name="nightly", task_type="report",
                   schedule=Schedule(kind=ScheduleKind.AT, at=make.soon()), payload=b"",
                   policies=Policies())  # fmt: skip
    job_id = JobId(uuid.uuid4())  # the SDK picks one per create: its retries repeat it
    proxy.lose_answer(b"INSERT INTO jobs")
    with pytest.raises(WheelError):
        await register_jobs(through, owner.id, [spec], partitions=8, job_ids=[job_id])
    assert proxy.lost.is_set()
    again = await register_jobs(through, owner.id, [spec], partitions=8, job_ids=[job_id])
    (registered,) = again.registered
    assert registered.job.id == job_id
    async with store.pool.connection() as conn:
        cursor = await conn.execute("SELECT count(*) FROM jobs WHERE tenant_id = %s", (owner.id,))
        assert await cursor.fetchone() == (1,), "one job, however many tries"
