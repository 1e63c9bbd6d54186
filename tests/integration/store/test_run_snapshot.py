"""One execution is one snapshot: its status and its attempts never disagree, even when a
result is recorded while it is being read (what made a run page say "in flight" beside an
attempts table that said succeeded)."""

from __future__ import annotations

import asyncio

import psycopg

from tests.integration.store import factories as make
from wheel.model.executions import ExecutionStatus, Outcome
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.store import Store

RECORD_SUCCESS = """
SELECT accepted FROM wheel_record_attempts(
    ARRAY[%(job_id)s]::uuid[], ARRAY[%(at)s]::timestamptz[], ARRAY[%(fence)s]::bigint[],
    ARRAY['succeeded']::wheel_outcome[], ARRAY['ex-1']::text[], ARRAY[NULL]::text[],
    ARRAY[now()]::timestamptz[], ARRAY[now()]::timestamptz[], ARRAY[NULL]::text[],
    %(at)s, %(at)s)
"""

READER_WAITS = """
SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
WHERE NOT l.granted AND c.relname = 'attempts'
"""


async def test_a_result_recorded_during_a_read_is_seen_whole_or_not_at_all(
    store: Store, database_dsn: str
) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=5)
    at = make.soon()
    key = ExecutionKey(job.id, at)
    await store.occurrences.insert([make.occurrence(job, at)])
    epochs = {PartitionId(5): 1}
    await store.occurrences.set_epochs(epochs, node_id="n")
    (claim,) = await store.occurrences.claim([key], epochs, lease_s=30)

    async with await psycopg.AsyncConnection.connect(database_dsn) as writer:
        # The writer holds the attempts table while it records the success, so a read
        # that reaches the attempts waits for its commit, whatever it read before.
        await writer.execute("LOCK TABLE attempts IN ACCESS EXCLUSIVE MODE")
        cursor = await writer.execute(
            RECORD_SUCCESS, {"job_id": job.id, "at": at, "fence": claim.fence}
        )
        assert await cursor.fetchone() == (True,)
        reading = asyncio.create_task(store.executions.get(owner.id, key))
        async with (
            asyncio.timeout(10),
            await psycopg.AsyncConnection.connect(database_dsn, autocommit=True) as watcher,
        ):
            # Polling the server's lock table: the reader's wait has no event to await.
            while True:
                if (await (await watcher.execute(READER_WAITS)).fetchone()) != (0,):
                    break
                await asyncio.sleep(0.01)
        await writer.commit()
    seen = await reading

    outcomes = [a.outcome for a in seen.attempts]
    if seen.status is ExecutionStatus.SUCCEEDED:
        assert outcomes == [Outcome.SUCCEEDED]
    else:
        assert (seen.status, outcomes) == (ExecutionStatus.DISPATCHED, [])
