"""Rows another transaction changed after a statement began: Postgres rechecks them.

A claim or a record that meets a row updated and committed since its snapshot
re-evaluates it on the newest version (EvalPlanQual). On Postgres 18 a
recheck under run-time partition pruning crashed the backend, and with it the
server (see "One day per statement" in schema.sql). Each test makes the recheck
happen for certain: the other transaction holds a lock the statement waits
for, changes rows on several day partitions, and commits while it waits.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import psycopg

from tests.integration.store import factories as make
from tests.integration.store.waiting import blocked_on_a_lock
from wheel.model.executions import AttemptResult, ExecutionStatus, Outcome
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.model.jobs import OverlapPolicy
from wheel.store import Store

DAYS = 3
LEASE_S = 30.0


async def spread(store: Store, count: int) -> list[ExecutionKey]:
    """Pending runs of one job over DAYS day partitions, in key order."""
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=4, overlap=OverlapPolicy.ALLOW)
    start = make.soon()
    times = [start + timedelta(days=n % DAYS, minutes=n) for n in range(count)]
    await store.occurrences.insert([make.occurrence(job, t) for t in times])
    return sorted(ExecutionKey(job.id, t) for t in times)


async def touch(conn: psycopg.AsyncConnection[object], keys: list[ExecutionKey], sets: str) -> None:
    for key in keys:
        await conn.execute(
            f"UPDATE executions SET {sets} WHERE job_id = %s AND scheduled_for = %s",  # type: ignore[arg-type]
            (key.job_id, key.scheduled_for),
        )


async def test_a_claim_rechecks_rows_changed_while_it_waited(
    store: Store, database_dsn: str
) -> None:
    keys = await spread(store, 12)
    epochs = {PartitionId(4): 1}
    await store.occurrences.set_epochs(epochs, node_id="node-a")
    touched, cancelled = keys[0:DAYS], keys[DAYS:DAYS + 2]  # fmt: skip
    async with await psycopg.AsyncConnection.connect(database_dsn) as other:
        # The claim waits for the epoch row after taking its snapshot.
        await other.execute("SELECT 1 FROM partition_epochs WHERE partition = 4 FOR UPDATE")
        await touch(other, touched, "error = 'touched'")
        await touch(other, cancelled, "status = 'cancelled'")
        claim = asyncio.create_task(store.occurrences.claim(keys, epochs, lease_s=LEASE_S))
        await blocked_on_a_lock(database_dsn)
        await other.commit()
    claimed = await claim
    assert sorted(c.key for c in claimed) == [k for k in keys if k not in cancelled]
    again = await store.occurrences.claim(keys, epochs, lease_s=LEASE_S)
    assert again == [], "every run still pending was claimed the first time"


async def test_concurrent_claims_of_rows_on_several_days_share_them_out(store: Store) -> None:
    keys = await spread(store, 240)
    epochs = {PartitionId(4): 1}
    await store.occurrences.set_epochs(epochs, node_id="node-a")
    orders = [keys, keys[::-1], keys[::2] + keys[1::2], keys[1::3] + keys]
    results = await asyncio.gather(
        *(store.occurrences.claim(order, epochs, lease_s=LEASE_S) for order in orders)
    )
    claimed = [c.key for result in results for c in result]
    assert sorted(claimed) == keys, "each run claimed exactly once"


async def test_a_record_rechecks_a_row_changed_while_it_waited_for_it(
    store: Store, database_dsn: str
) -> None:
    keys = await spread(store, 12)
    epochs = {PartitionId(4): 1}
    await store.occurrences.set_epochs(epochs, node_id="node-a")
    claimed = await store.occurrences.claim(keys, epochs, lease_s=LEASE_S)
    assert len(claimed) == len(keys)
    results = [AttemptResult(c.key, c.fence, Outcome.SUCCEEDED) for c in claimed]
    async with await psycopg.AsyncConnection.connect(database_dsn) as other:
        # The first of the sorted batch on every day is locked and changed; the
        # record waits for it, then reads its newest version.
        firsts = [next(k for k in keys if k.scheduled_for.date() == day)
                  for day in sorted({k.scheduled_for.date() for k in keys})]  # fmt: skip
        await touch(other, firsts, "error = 'touched'")
        record = asyncio.create_task(store.occurrences.record_results(results))
        await blocked_on_a_lock(database_dsn)
        await other.commit()
    outcome = await record
    assert outcome.stale == []
    assert sorted(r.key for r in outcome.recorded) == keys
    assert {r.status for r in outcome.recorded} == {ExecutionStatus.SUCCEEDED}
