"""What scheduler nodes need from the store: claim states, the misfire rule, due notifications."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta

import psycopg

from tests.integration.store import factories as make
from wheel.model.executions import ClaimState, ExecutionStatus
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.model.jobs import Job, MisfirePolicy, OverlapPolicy
from wheel.store import Store

EPOCH = 7


async def owned(store: Store, *partitions: int) -> dict[PartitionId, int]:
    epochs = {PartitionId(p): EPOCH for p in partitions}
    await store.occurrences.set_epochs(epochs, node_id="node-a")
    return epochs


def ago(seconds: float) -> datetime:
    return (datetime.now(UTC) - timedelta(seconds=seconds)).replace(microsecond=0)


async def status_of(store: Store, job: Job, at: datetime) -> tuple[ExecutionStatus, str | None]:
    execution = await store.executions.get(job.tenant_id, ExecutionKey(job.id, at))
    return execution.status, execution.reason


async def test_overlap_skip_records_the_second_run_skipped(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=1, overlap=OverlapPolicy.SKIP)
    # The first is in flight by the second's instant (the second is claimed ahead of it).
    first, second = ago(2), datetime.now(UTC) + timedelta(milliseconds=500)
    await store.occurrences.insert([make.occurrence(job, first), make.occurrence(job, second)])
    epochs = await owned(store, 1)
    (_claimed,) = await store.occurrences.claim([ExecutionKey(job.id, first)], epochs, lease_s=30)
    outcome = await store.occurrences.claim_batch(
        [ExecutionKey(job.id, second)], epochs, lease_s=30, ahead_s=1
    )
    assert outcome.claimed == []
    assert [(u.key.scheduled_for, u.state) for u in outcome.unclaimed] == [
        (second, ClaimState.SKIPPED)
    ]
    status, reason = await status_of(store, job, second)
    assert status is ExecutionStatus.SKIPPED
    assert reason is not None
    assert reason.startswith(f"overlap: run {ExecutionKey(job.id, first).id} was in flight")


async def test_overlap_queue_leaves_the_second_run_pending(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=1, overlap=OverlapPolicy.QUEUE, misfire_grace=timedelta(hours=1)
    )  # late, not missed
    first, second = ago(120), ago(60)
    await store.occurrences.insert([make.occurrence(job, first), make.occurrence(job, second)])
    epochs = await owned(store, 1)
    await store.occurrences.claim([ExecutionKey(job.id, first)], epochs, lease_s=30)
    outcome = await store.occurrences.claim_batch(
        [ExecutionKey(job.id, second)], epochs, lease_s=30, ahead_s=1
    )
    assert [u.state for u in outcome.unclaimed] == [ClaimState.BLOCKED]
    assert (await status_of(store, job, second))[0] is ExecutionStatus.PENDING


async def test_overlap_allow_claims_both(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=1, overlap=OverlapPolicy.ALLOW, misfire_grace=timedelta(hours=1)
    )  # late, not missed
    first, second = ago(120), ago(60)
    await store.occurrences.insert([make.occurrence(job, first), make.occurrence(job, second)])
    epochs = await owned(store, 1)
    await store.occurrences.claim([ExecutionKey(job.id, first)], epochs, lease_s=30)
    assert len(await store.occurrences.claim([ExecutionKey(job.id, second)], epochs, lease_s=30))


async def test_an_occurrence_firing_later_than_allowed_comes_back_early(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=2)
    later = make.soon() + timedelta(minutes=5)
    await store.occurrences.insert([make.occurrence(job, later)])
    epochs = await owned(store, 2)
    outcome = await store.occurrences.claim_batch(
        [ExecutionKey(job.id, later)], epochs, lease_s=30, ahead_s=1
    )
    assert outcome.claimed == []
    assert [(u.state, u.fire_at) for u in outcome.unclaimed] == [(ClaimState.EARLY, later)]


async def test_a_cron_occurrence_of_an_edited_job_is_not_claimed(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=2)
    at = ago(1)
    await store.occurrences.insert([make.occurrence(job, at)])
    await store.jobs.update(owner.id, job.id, job.version, job.spec)
    epochs = await owned(store, 2)
    outcome = await store.occurrences.claim_batch(
        [ExecutionKey(job.id, at)], epochs, lease_s=30, ahead_s=1
    )
    assert outcome.claimed == []
    assert outcome.unclaimed == []


async def test_misfire_policies_on_overdue_runs(store: Store) -> None:
    owner = await make.tenant(store)
    grace = timedelta(seconds=30)
    jobs = {
        policy: await make.job(store, owner, partition=3, misfire=policy, misfire_grace=grace,
                               misfire_replay_cap=2)
        for policy in MisfirePolicy
    }  # fmt: skip
    missed = [ago(600), ago(400), ago(200)]
    recent = ago(5)  # within grace: late, not missed
    await store.occurrences.insert(
        [make.occurrence(job, at) for job in jobs.values() for at in [*missed, recent]]
    )
    other_node_epochs = {PartitionId(3): EPOCH + 1}
    assert await store.occurrences.apply_misfire(other_node_epochs) == 0, "epoch-fenced"
    skipped = await store.occurrences.apply_misfire(await owned(store, 3))
    pending = {
        policy: [
            at
            for at in [*missed, recent]
            if (await status_of(store, job, at))[0] is ExecutionStatus.PENDING
        ]
        for policy, job in jobs.items()
    }
    # The runs before `recent` came due while nobody fired: missed, whatever their age.
    assert pending[MisfirePolicy.SKIP] == [recent]
    assert pending[MisfirePolicy.FIRE_ONCE] == [recent], "once: the latest only"
    assert pending[MisfirePolicy.FIRE_ALL] == [missed[-1], recent], "the latest two (the cap)"
    assert skipped == 3 + 3 + 2
    _, reason = await status_of(store, jobs[MisfirePolicy.SKIP], missed[0])
    assert reason is not None
    assert "policy skip" in reason


async def test_runs_missed_within_the_grace_are_misfires_not_overlaps(store: Store) -> None:
    """A node down for 30 s misses a 10-second job's runs, each less than the grace
    late: fire_once fires the latest and records the rest as misfires (before, all
    were loaded and the overlap policy skipped them, blaming overlap)."""
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=3, misfire=MisfirePolicy.FIRE_ONCE,
                         misfire_grace=timedelta(seconds=60))  # fmt: skip
    runs = [ago(30), ago(20), ago(10)]
    await store.occurrences.insert([make.occurrence(job, at) for at in runs])
    assert await store.occurrences.apply_misfire(await owned(store, 3)) == 2
    states = [await status_of(store, job, at) for at in runs]
    assert [state for state, _ in states] == [
        ExecutionStatus.SKIPPED, ExecutionStatus.SKIPPED, ExecutionStatus.PENDING,
    ]  # fmt: skip
    assert all("misfire" in (reason or "") for _, reason in states[:2])
    one_late = await make.job(store, owner, partition=3, misfire=MisfirePolicy.SKIP,
                              misfire_grace=timedelta(seconds=60))  # fmt: skip
    await store.occurrences.insert([make.occurrence(one_late, ago(5))])
    assert await store.occurrences.apply_misfire(await owned(store, 3)) == 0, "late, not missed"


async def test_misfire_leaves_retries_alone(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=3, misfire=MisfirePolicy.SKIP,
                         misfire_grace=timedelta(hours=1))  # fmt: skip
    at = ago(600)
    await store.occurrences.insert([make.occurrence(job, at)])
    epochs = await owned(store, 3)
    (_claim,) = await store.occurrences.claim([ExecutionKey(job.id, at)], epochs, lease_s=0)
    await store.occurrences.reap(epochs)  # a failed attempt: pending again, attempt 1
    policies = dataclasses.replace(job.spec.policies, misfire_grace=timedelta(seconds=60))
    await store.jobs.update(
        owner.id, job.id, job.version, dataclasses.replace(job.spec, policies=policies)
    )  # now long past its grace
    assert await store.occurrences.apply_misfire(epochs) == 0


async def test_inserting_soon_due_occurrences_notifies_the_partition(
    store: Store, database_dsn: str
) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=5)
    async with await psycopg.AsyncConnection.connect(database_dsn, autocommit=True) as listener:
        await listener.execute("LISTEN wheel_due")
        soon, far = make.soon(), datetime.now(UTC) + timedelta(hours=2)
        await store.occurrences.insert([make.occurrence(job, far)])  # not soon: no notification
        await store.occurrences.insert([make.occurrence(job, soon)])
        notify = await asyncio.wait_for(anext(listener.notifies()), 10)
    created, _, entries = notify.payload.partition("|")
    assert entries == f"5:{int(soon.timestamp() * 1000)}"
    assert abs(int(created) / 1000 - datetime.now(UTC).timestamp()) < 60


async def test_resuming_a_job_notifies_its_partition(store: Store, database_dsn: str) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=6)
    await store.jobs.pause(owner.id, job.id)
    async with await psycopg.AsyncConnection.connect(database_dsn, autocommit=True) as listener:
        await listener.execute("LISTEN wheel_due")
        await store.jobs.resume(owner.id, job.id)
        notify = await asyncio.wait_for(anext(listener.notifies()), 10)
    assert notify.payload == "6:0"


async def test_a_bulk_insert_analyses_the_partition_it_filled(
    store: Store, database_dsn: str
) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=7, overlap=OverlapPolicy.ALLOW)
    start = (datetime.now(UTC) + timedelta(days=1)).replace(hour=6, minute=0, second=0)
    await store.occurrences.insert(
        [make.occurrence(job, start + timedelta(seconds=n)) for n in range(1500)]
    )
    async with await psycopg.AsyncConnection.connect(database_dsn, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = %s",
            (f"executions_{start:%Y%m%d}",),
        )
        assert await cursor.fetchone() == (True,)


async def test_a_retry_of_an_edited_cron_job_is_still_claimed(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=2)
    at = ago(5)
    await store.occurrences.insert([make.occurrence(job, at)])
    epochs = await owned(store, 2)
    await store.occurrences.claim([ExecutionKey(job.id, at)], epochs, lease_s=0)
    await store.jobs.update(owner.id, job.id, job.version, job.spec)  # edited mid-run
    await store.occurrences.reap(epochs)  # the attempt failed: pending again, old version
    outcome = await store.occurrences.claim_batch(
        [ExecutionKey(job.id, at)], epochs, lease_s=30, ahead_s=60
    )
    assert [c.attempt for c in outcome.claimed] == [2]
