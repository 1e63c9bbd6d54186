"""The hot path against real Postgres: inserts, due windows, claims, fences, results, reaping."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import psycopg.sql
import pytest
from psycopg_pool import AsyncConnectionPool

from tests.integration.store import factories as make
from tests.integration.store.waiting import blocked_on_a_lock
from wheel.model.executions import AttemptResult, ExecutionStatus, Fenced, Outcome
from wheel.model.ids import ExecutionKey, JobId, PartitionId
from wheel.model.jobs import OverlapPolicy
from wheel.model.tenants import Tenant
from wheel.store import Store
from wheel.store.occurrences import DueCursor, ExecutorBinding

EPOCH = 100


async def owned(store: Store, *partitions: int, epoch: int = EPOCH) -> dict[PartitionId, int]:
    epochs = {PartitionId(p): epoch for p in partitions}
    assert await store.occurrences.set_epochs(epochs, node_id="node-a") == sorted(epochs)
    return epochs


EX1 = ExecutorBinding("ex-1", "instance-1")


async def claimed_one(
    store: Store, *, executor: ExecutorBinding = EX1, **policies: object
) -> tuple[ExecutionKey, int]:
    """An occurrence claimed once for `executor`: its key and fence."""
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=3, **policies)
    at = make.soon()
    await store.occurrences.insert([make.occurrence(job, at)])
    claims = await store.occurrences.claim(
        [ExecutionKey(job.id, at)], await owned(store, 3), lease_s=30, executors=[executor]
    )
    assert len(claims) == 1
    return claims[0].key, claims[0].fence


async def test_insert_is_idempotent_per_job_and_instant(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner)
    times = make.minutes(make.soon(), 5)
    first = await store.occurrences.insert([make.occurrence(job, t) for t in times])
    again = await store.occurrences.insert(
        [make.occurrence(job, t) for t in [*times[2:], times[-1] + timedelta(minutes=1)]]
    )
    assert sorted(first) == [ExecutionKey(job.id, t) for t in times]
    assert again == [ExecutionKey(job.id, times[-1] + timedelta(minutes=1))]


async def test_insert_creates_the_day_partitions_it_needs(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner)
    # A day far ahead, whatever today is: no partition exists for it yet.
    far = (datetime.now(UTC) + timedelta(days=1500)).replace(hour=9, minute=0, second=0)
    far = far.replace(microsecond=0)
    assert await store.occurrences.insert([make.occurrence(job, far)]) == [
        ExecutionKey(job.id, far)
    ]
    assert far.date() in await store.time_partitions.existing()


async def test_load_due_pages_through_a_window_in_firing_order(store: Store) -> None:
    owner = await make.tenant(store)
    mine = await make.job(store, owner, partition=1)
    other = await make.job(store, owner, partition=2)
    start = make.soon()
    await store.occurrences.insert(
        [make.occurrence(mine, t) for t in make.minutes(start, 25)]
        + [make.occurrence(other, t) for t in make.minutes(start, 5)]
    )
    window_end = start + timedelta(minutes=20)
    seen, cursor = [], None
    while True:
        page = await store.occurrences.load_due([PartitionId(1)], window_end, after=cursor, limit=6)
        seen.extend(page)
        if len(page) < 6:
            break
        cursor = DueCursor(page[-1].fire_at, page[-1].key)
    assert [d.key.scheduled_for for d in seen] == make.minutes(start, 20)
    assert {d.partition for d in seen} == {1}


async def test_claim_moves_pending_to_dispatched_with_a_new_fence(store: Store) -> None:
    key, fence = await claimed_one(store)
    assert fence == 1
    again = await store.occurrences.claim([key], {PartitionId(3): EPOCH}, lease_s=30)
    assert again == [], "a dispatched occurrence is not claimed twice"


async def test_claim_with_a_stale_epoch_claims_nothing(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=5)
    at = make.soon()
    await store.occurrences.insert([make.occurrence(job, at)])
    await owned(store, 5, epoch=EPOCH)
    # Another node acquired partition 5 since: a newer epoch is recorded.
    assert await store.occurrences.set_epochs({PartitionId(5): EPOCH + 7}, node_id="node-b") == [5]
    stale = await store.occurrences.claim(
        [ExecutionKey(job.id, at)], {PartitionId(5): EPOCH}, lease_s=30
    )
    assert stale == []
    fresh = await store.occurrences.claim(
        [ExecutionKey(job.id, at)], {PartitionId(5): EPOCH + 7}, lease_s=30
    )
    assert [c.key for c in fresh] == [ExecutionKey(job.id, at)]
    execution = await store.executions.get(owner.id, ExecutionKey(job.id, at))
    assert execution.claimed_by == "node-b", "the claim records the epoch's node"
    assert execution.dispatched_at is not None


async def test_epochs_only_move_forward(store: Store) -> None:
    await owned(store, 1, 2, epoch=50)
    accepted = await store.occurrences.set_epochs(
        {PartitionId(1): 49, PartitionId(2): 51, PartitionId(3): 1}, node_id="node-b"
    )
    assert accepted == [2, 3]
    # The same epoch again (the same acquisition) is accepted: idempotent.
    assert await store.occurrences.set_epochs({PartitionId(2): 51}, node_id="node-b") == [2]


async def test_concurrent_claimers_of_the_same_rows_get_disjoint_sets(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=4, overlap=OverlapPolicy.ALLOW)
    times = make.minutes(make.soon(), 300)
    await store.occurrences.insert([make.occurrence(job, t) for t in times])
    epochs = await owned(store, 4)
    keys = [ExecutionKey(job.id, t) for t in times]
    results = await asyncio.gather(
        *(store.occurrences.claim(keys[::step] if step > 0 else keys[::-1], epochs, lease_s=30)
          for step in (1, 1, 2, -1, 3))
    )  # fmt: skip
    won = [c.key for result in results for c in result]
    assert len(won) == len(set(won)), "no occurrence claimed twice"
    assert set(won) == set(keys), "every occurrence claimed by someone"


async def test_paused_jobs_are_not_claimed(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=6)
    at = make.soon()
    await store.occurrences.insert([make.occurrence(job, at)])
    await store.jobs.pause(owner.id, job.id)
    epochs = await owned(store, 6)
    assert await store.occurrences.claim([ExecutionKey(job.id, at)], epochs, lease_s=30) == []
    await store.jobs.resume(owner.id, job.id)
    assert len(await store.occurrences.claim([ExecutionKey(job.id, at)], epochs, lease_s=30)) == 1


async def test_heartbeat_extends_only_with_the_current_fence(store: Store) -> None:
    key, fence = await claimed_one(store)
    good, stale = Fenced(key, fence), Fenced(key, fence - 1)
    refused = await store.occurrences.heartbeat([good, stale], executor=EX1, lease_s=60)
    assert refused == [stale]


async def test_a_run_given_back_unstarted_records_no_start_whatever_its_heartbeats_said(
    store: Store,
) -> None:
    """An executor heartbeats the runs waiting there for a slot; one it hands back never
    started, so neither its attempt nor the execution, pending again, says it did."""
    key, fence = await claimed_one(store)
    assert await store.occurrences.heartbeat([Fenced(key, fence)], executor=EX1, lease_s=60) == []
    given_back = AttemptResult(key, fence, Outcome.NOT_STARTED, error="handed back: waited",
                               executor_id=EX1.executor_id,
                               executor_instance=EX1.instance)  # fmt: skip
    outcome = await store.occurrences.record_results([given_back])
    assert [r.status for r in outcome.recorded] == [ExecutionStatus.PENDING]
    async with store.pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT e.started_at, a.started_at, a.outcome::text FROM executions e"
            " JOIN attempts a USING (job_id, scheduled_for) WHERE e.job_id = %s",
            (key.job_id,),
        )
        assert await cursor.fetchall() == [(None, None, "not_started")]


async def test_only_the_executor_process_a_run_went_to_may_report_it(store: Store) -> None:
    """Another holder of an executor token, with the right id and fence but not the
    process's instance, can neither keep the run alive nor settle it."""
    key, fence = await claimed_one(store)
    for intruder in (ExecutorBinding("ex-2", "instance-2"), ExecutorBinding("ex-1", "guess")):
        assert await store.occurrences.heartbeat(
            [Fenced(key, fence)], executor=intruder, lease_s=600
        ) == [Fenced(key, fence)]
        forged = AttemptResult(key, fence, Outcome.SUCCEEDED, executor_id=intruder.executor_id,
                               executor_instance=intruder.instance)  # fmt: skip
        outcome = await store.occurrences.record_results([forged])
        assert outcome.recorded == []
        (refused,) = outcome.stale
        assert refused.not_yours
        assert (refused.current_fence, refused.status) == (None, None), "nothing is told"
    async with store.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT status::text, executor_id, (SELECT count(*) FROM attempts a"
                " WHERE a.job_id = e.job_id) FROM executions e WHERE job_id = %s",
                (key.job_id,),
            )
        ).fetchone()
    assert row == ("dispatched", "ex-1", 0), "no attempt was recorded under an intruder"
    real = AttemptResult(key, fence, Outcome.SUCCEEDED, executor_id="ex-1",
                         executor_instance="instance-1")  # fmt: skip
    assert [r.status for r in (await store.occurrences.record_results([real])).recorded] == [
        ExecutionStatus.SUCCEEDED
    ]


async def test_success_is_recorded_once_and_a_stale_fence_is_refused(store: Store) -> None:
    key, fence = await claimed_one(store)
    done = AttemptResult(key, fence, Outcome.SUCCEEDED, executor_id="ex-1")
    outcome = await store.occurrences.record_results(
        [done, AttemptResult(key, fence + 5, Outcome.FAILED)]
    )
    assert [(r.key, r.status) for r in outcome.recorded] == [(key, ExecutionStatus.SUCCEEDED)]
    assert [(s.key, s.fence) for s in outcome.stale] == [(key, fence + 5)]
    late = await store.occurrences.record_results([done])
    assert late.recorded == []
    assert [(s.current_fence, s.status) for s in late.stale] == [(fence, ExecutionStatus.SUCCEEDED)]


async def test_a_result_for_an_unknown_execution_is_stale_without_a_fence(store: Store) -> None:
    ghost = ExecutionKey(JobId(uuid.uuid4()), make.soon())
    outcome = await store.occurrences.record_results([AttemptResult(ghost, 1, Outcome.SUCCEEDED)])
    assert [(s.key, s.current_fence, s.status) for s in outcome.stale] == [(ghost, None, None)]


async def test_failure_retries_with_jittered_backoff_then_dies(store: Store) -> None:
    key, fence = await claimed_one(store, max_attempts=2, backoff_base=timedelta(seconds=10))
    before = datetime.now(UTC)
    first = await store.occurrences.record_results(
        [AttemptResult(key, fence, Outcome.FAILED, error="boom")]
    )
    (retry,) = first.recorded
    assert retry.status is ExecutionStatus.PENDING
    assert (
        before - timedelta(seconds=1) <= retry.fire_at <= datetime.now(UTC) + timedelta(seconds=10)
    )

    epochs = {PartitionId(3): EPOCH}
    (again,) = await store.occurrences.claim([key], epochs, lease_s=30)
    assert (again.fence, again.attempt) == (fence + 1, 2)
    second = await store.occurrences.record_results(
        [AttemptResult(key, again.fence, Outcome.FAILED, error="boom")]
    )
    assert [r.status for r in second.recorded] == [ExecutionStatus.DEAD]


async def test_a_job_that_is_not_idempotent_waits_for_review(store: Store) -> None:
    key, fence = await claimed_one(store, idempotent=False)
    outcome = await store.occurrences.record_results([AttemptResult(key, fence, Outcome.FAILED)])
    assert [r.status for r in outcome.recorded] == [ExecutionStatus.NEEDS_REVIEW]


async def test_not_started_gives_the_attempt_back(store: Store) -> None:
    key, fence = await claimed_one(store, idempotent=False, max_attempts=1)
    outcome = await store.occurrences.record_results(
        [AttemptResult(key, fence, Outcome.NOT_STARTED)]
    )
    (given_back,) = outcome.recorded
    assert (given_back.status, given_back.attempt) == (ExecutionStatus.PENDING, 0)


async def three_runs_in_partition_7(
    store: Store,
) -> tuple[Tenant, list[ExecutionKey], dict[PartitionId, int]]:
    """A job of three pending runs a minute apart in partition 7, due (a lease counts from
    the later of the claim and the instant), owned: its tenant, keys and the epochs to claim
    them with."""
    owner = await make.tenant(store)
    # Late, not missed (its grace is an hour): claimed whatever the misfire policy.
    job = await make.job(
        store, owner, partition=7, max_attempts=3, misfire_grace=timedelta(hours=1)
    )
    times = make.minutes(datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=3), 3)
    await store.occurrences.insert([make.occurrence(job, t) for t in times])
    return owner, [ExecutionKey(job.id, t) for t in times], await owned(store, 7)


async def test_the_reaper_counts_an_expired_lease_as_a_failed_attempt(store: Store) -> None:
    owner, keys, epochs = await three_runs_in_partition_7(store)
    expiring = await store.occurrences.claim(keys[:2], epochs, lease_s=0)
    await store.occurrences.claim(keys[2:], epochs, lease_s=600)
    assert await store.occurrences.reap({PartitionId(7): EPOCH - 1}) == [], (
        "stale epoch reaps nothing"
    )
    reaped = await store.occurrences.reap(epochs)
    assert sorted(r.key for r in reaped) == keys[:2]
    assert {r.status for r in reaped} == {ExecutionStatus.PENDING}
    # The executor's late result carries the fence of the reaped lease: refused.
    late = await store.occurrences.record_results(
        [AttemptResult(expiring[0].key, expiring[0].fence, Outcome.SUCCEEDED)]
    )
    assert late.recorded == []
    assert len(late.stale) == 1
    execution = await store.executions.get(owner.id, keys[0])
    assert [(a.number, a.outcome) for a in execution.attempts] == [(1, Outcome.LEASE_EXPIRED)]


async def test_the_reaper_spares_the_attempts_it_is_told_of_and_no_other_fence(
    store: Store,
) -> None:
    """A lapsed lease whose result or heartbeat waits in the node's recorder is spared; a
    spared key with another fence (an older dispatch's report) spares nothing."""
    _, keys, epochs = await three_runs_in_partition_7(store)
    claimed = await store.occurrences.claim(keys, epochs, lease_s=0)
    fences = {c.key: c.fence for c in claimed}
    spare = [Fenced(keys[0], fences[keys[0]]), Fenced(keys[1], fences[keys[1]] - 1)]
    reaped = await store.occurrences.reap(epochs, spare=spare)
    assert sorted(r.key for r in reaped) == keys[1:]
    # Its result, recorded late, is accepted: the attempt was never taken from it.
    result = await store.occurrences.record_results(
        [AttemptResult(keys[0], fences[keys[0]], Outcome.SUCCEEDED)]
    )
    assert [r.status for r in result.recorded] == [ExecutionStatus.SUCCEEDED]
    assert await store.occurrences.reap(epochs) == []


async def test_a_claim_racing_an_epoch_change_is_fenced(store: Store, database_dsn: str) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=8)
    at = make.soon()
    await store.occurrences.insert([make.occurrence(job, at)])
    await owned(store, 8)
    # The new owner's epoch write is in flight (uncommitted) when the old owner claims.
    async with await psycopg.AsyncConnection.connect(database_dsn) as new_owner:
        await new_owner.execute(
            "UPDATE partition_epochs SET epoch = %s, node_id = 'node-b' WHERE partition = 8",
            (EPOCH + 1,),
        )
        claim = asyncio.create_task(
            store.occurrences.claim([ExecutionKey(job.id, at)], {PartitionId(8): EPOCH}, lease_s=30)
        )
        await blocked_on_a_lock(database_dsn)
        assert not claim.done(), (
            "the claim waits for the epoch row instead of acting on a stale read"
        )
        await new_owner.commit()
    assert await claim == []


class CountingConnection(psycopg.AsyncConnection[Any]):
    """A real connection that counts the data statements sent through it.

    Maintenance is not counted: a bulk insert may be followed by an ANALYZE of
    the partition it filled (see TimePartitions.note_inserted).
    """

    statements = 0

    async def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        text = query.as_string(self) if isinstance(query, psycopg.sql.Composable) else str(query)
        if not text.lstrip().upper().startswith("ANALYZE"):
            CountingConnection.statements += 1
        return await super().execute(query, *args, **kwargs)


@pytest.fixture
async def counting_store(database_dsn: str) -> AsyncIterator[Store]:
    pool: Any = AsyncConnectionPool(
        database_dsn,
        min_size=1,
        max_size=2,
        open=False,
        connection_class=CountingConnection,
        kwargs={"autocommit": True},
    )
    await pool.open(wait=True)
    try:
        yield Store.over(pool)
    finally:
        await pool.close()


@pytest.mark.parametrize("batch", [1, 1000])
async def test_a_batch_costs_the_same_statements_whatever_its_size(
    counting_store: Store, batch: int
) -> None:
    store = counting_store
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=9)
    times = [make.soon() + timedelta(seconds=n) for n in range(batch)]
    epochs = await owned(store, 9)
    await store.time_partitions.ensure({t.date() for t in times})
    keys = [ExecutionKey(job.id, t) for t in times]
    counts = []
    for operation in (
        store.occurrences.insert([make.occurrence(job, t) for t in times]),
        store.occurrences.load_due([PartitionId(9)], times[-1] + timedelta(seconds=1), limit=batch),
        store.occurrences.claim(keys, epochs, lease_s=30, executors=[EX1] * len(keys)),
        store.occurrences.heartbeat([Fenced(k, 1) for k in keys], executor=EX1, lease_s=30),
        store.occurrences.record_results([AttemptResult(k, 1, Outcome.SUCCEEDED) for k in keys]),
        store.occurrences.reap(epochs),
    ):
        CountingConnection.statements = 0
        await operation
        counts.append(CountingConnection.statements)
    # A claim and a record move their tenants' in-flight counts in the same statement.
    assert counts == [1] * 6
    done, _ = await store.executions.list(
        owner.id, statuses=[ExecutionStatus.SUCCEEDED], page_size=1000
    )
    assert len(done) == batch


async def test_the_catch_up_reads_what_became_pending_since_not_the_backlog(
    store: Store,
) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=5)
    backlog = [make.soon() - timedelta(hours=2, minutes=n) for n in range(50)]
    await store.occurrences.insert([make.occurrence(job, at) for at in backlog])
    async with store.pool.connection() as conn:  # made an hour ago, and loaded since
        await conn.execute("UPDATE executions SET pending_since = now() - interval '1 hour'")
    fresh = [make.soon() + timedelta(minutes=n) for n in range(3)]
    await store.occurrences.insert([make.occurrence(job, at) for at in fresh])
    since = datetime.now(UTC) - timedelta(minutes=1)
    found = await store.occurrences.load_requeued(
        [PartitionId(5)], since, datetime.now(UTC) + timedelta(hours=1), limit=2
    )
    assert sorted(o.key.scheduled_for for o in found) == fresh, "every page, none of the backlog"
