"""Jobs: tenant-scoped reads and writes, versioned updates, pause/resume/delete."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import psycopg
import pytest

from tests.integration.store import factories as make
from wheel.errors import InvalidTransition, NotFound, VersionConflict
from wheel.model.executions import ExecutionStatus, NewOccurrence
from wheel.model.ids import ExecutionKey, JobId, PartitionId, new_job_id, partition_of
from wheel.model.jobs import JobSpec, JobStatus, Policies, Schedule, ScheduleKind
from wheel.store import Store


async def test_a_job_round_trips_every_field(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(
        store,
        owner,
        max_attempts=7,
        idempotent=False,
        backoff_cap=timedelta(minutes=9),
        pool="slow",
    )
    got = await store.jobs.get(owner.id, job.id)
    assert got == job
    assert got.spec.policies == Policies(
        max_attempts=7, idempotent=False, backoff_cap=timedelta(minutes=9), pool="slow"
    )
    assert (got.version, got.status) == (1, JobStatus.ACTIVE)


async def test_a_one_off_is_written_with_its_occurrence_in_one_transaction(store: Store) -> None:
    owner = await make.tenant(store)
    at = make.soon()
    job_id = new_job_id()
    spec = JobSpec("once", "report", Schedule(ScheduleKind.AT, at=at))
    partition = partition_of(job_id, make.PARTITIONS)
    occurrence = NewOccurrence(ExecutionKey(job_id, at), owner.id, partition, 1, at)
    await store.jobs.create(owner.id, job_id, partition, spec, [occurrence])
    execution = await store.executions.get(owner.id, ExecutionKey(job_id, at))
    assert execution.status is ExecutionStatus.PENDING


async def test_another_tenants_job_does_not_exist(store: Store) -> None:
    owner, stranger = await make.tenant(store), await make.tenant(store)
    job = await make.job(store, owner)
    for attempt in (
        store.jobs.get(stranger.id, job.id),
        store.jobs.pause(stranger.id, job.id),
        store.jobs.resume(stranger.id, job.id),
        store.jobs.delete(stranger.id, job.id),
        store.jobs.update(stranger.id, job.id, 1, job.spec),
    ):
        with pytest.raises(NotFound):
            await attempt
    assert (await store.jobs.get(owner.id, job.id)).status is JobStatus.ACTIVE
    assert await store.jobs.list(stranger.id) == ([], "")


async def test_update_with_a_stale_version_is_refused(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner)
    renamed = dataclasses.replace(job.spec, name="renamed")
    updated = await store.jobs.update(owner.id, job.id, 1, renamed)
    assert (updated.version, updated.spec.name) == (2, "renamed")
    with pytest.raises(VersionConflict) as caught:
        await store.jobs.update(owner.id, job.id, 1, dataclasses.replace(job.spec, name="lost"))
    assert (caught.value.expected, caught.value.current) == (1, 2)
    assert (await store.jobs.get(owner.id, job.id)).spec.name == "renamed"


async def test_pause_resume_and_delete(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner)
    times = make.minutes(make.soon(), 3)
    await store.occurrences.insert([make.occurrence(job, t) for t in times])
    assert (await store.jobs.pause(owner.id, job.id)).status is JobStatus.PAUSED
    assert (await store.jobs.pause(owner.id, job.id)).status is JobStatus.PAUSED
    assert (await store.jobs.resume(owner.id, job.id)).status is JobStatus.ACTIVE
    deleted = await store.jobs.delete(owner.id, job.id)
    assert deleted.status is JobStatus.DELETED
    executions, _ = await store.executions.list(owner.id, job_id=job.id)
    assert {(e.status, e.reason) for e in executions} == {
        (ExecutionStatus.CANCELLED, "job deleted")
    }
    with pytest.raises(InvalidTransition, match=r"cannot resume job .*: it is deleted"):
        await store.jobs.resume(owner.id, job.id)
    with pytest.raises(InvalidTransition):
        await store.jobs.update(owner.id, job.id, deleted.version, job.spec)
    assert (await store.jobs.delete(owner.id, job.id)).status is JobStatus.DELETED


async def test_list_pages_newest_first_without_deleted_jobs(store: Store) -> None:
    owner = await make.tenant(store)
    jobs = [await make.job(store, owner) for _ in range(7)]
    await store.jobs.delete(owner.id, jobs[3].id)
    listed, token = [], ""
    while True:
        page, token = await store.jobs.list(owner.id, page_size=2, page_token=token)
        listed.extend(page)
        if not token:
            break
    expected = sorted((j for j in jobs if j.id != jobs[3].id), key=lambda j: (j.created_at, j.id))
    assert [j.id for j in listed] == [j.id for j in reversed(expected)]


async def test_bulk_creates_analyse_jobs_only_once_it_grew_by_a_quarter(
    store: Store, database_dsn: str
) -> None:
    """ANALYZE after every bulk create cost as much as the create itself (more as the table
    grew): the table is analysed when never analysed, then after growing by a quarter."""
    owner = await make.tenant(store)

    def batch(count: int) -> list[tuple[JobId, PartitionId, JobSpec]]:
        ids = [new_job_id() for _ in range(count)]
        cron = Schedule(ScheduleKind.CRON, cron="* * * * *")
        return [(i, partition_of(i, make.PARTITIONS), JobSpec(f"bulk {i}", "report", cron))
                for i in ids]  # fmt: skip

    async def analyses() -> int:
        async with await psycopg.AsyncConnection.connect(database_dsn, autocommit=True) as conn:
            cursor = await conn.execute(
                "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'jobs'"
            )
            row = await cursor.fetchone()
        assert row is not None
        return int(row[0])

    before = await analyses()
    await store.jobs.create_many(owner.id, batch(4400))  # never analysed in this database
    assert await analyses() == before + 1
    await store.jobs.create_many(owner.id, batch(1000))  # 1,000 < 4,400 / 4
    assert await analyses() == before + 1
    await store.jobs.create_many(owner.id, batch(1000))  # 2,000 >= 4,400 / 4
    assert await analyses() == before + 2
