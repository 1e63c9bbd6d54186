"""The materialiser against real Postgres: idempotent, catches up by policy, follows edits."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from tests.integration.store import factories as make
from wheel.model.executions import Execution, ExecutionStatus, Trigger
from wheel.model.ids import PartitionId, new_job_id
from wheel.model.jobs import Job, JobSpec, MisfirePolicy, Policies, Schedule, ScheduleKind
from wheel.model.tenants import Tenant
from wheel.scheduler.materialiser import Materialiser
from wheel.store import Store

PARTITION = PartitionId(0)
HOUR = timedelta(hours=1)


def current_minute() -> datetime:
    """Now, 30 s past a whole 10 minutes, so counts of */10 runs are exact."""
    now = datetime.now(UTC)
    return now.replace(minute=now.minute - now.minute % 10, second=30, microsecond=0)


async def cron_job(
    store: Store, owner: Tenant, expression: str = "*/10 * * * *", **policies: object
) -> Job:
    spec = JobSpec("ten", "report", Schedule(ScheduleKind.CRON, cron=expression),
                   policies=Policies(**policies))  # type: ignore[arg-type]  # fmt: skip
    return await store.jobs.create(owner.id, new_job_id(), PARTITION, spec)


async def executions(store: Store, job: Job) -> list[Execution]:
    found, token = [], ""
    while True:
        page, token = await store.executions.list(
            job.tenant_id, job_id=job.id, page_size=1000, page_token=token
        )
        found.extend(page)
        if not token:
            return sorted(found, key=lambda e: e.key.scheduled_for)


def backdate(dsn: str, job: Job, to: datetime) -> None:
    """As if the job was created, and last materialised, at `to`."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE jobs SET created_at = %s, materialised_to = %s WHERE id = %s", (to, to, job.id)
        )


async def test_it_fills_the_horizon_once_even_when_run_concurrently(store: Store) -> None:
    owner = await make.tenant(store)
    job = await cron_job(store, owner)
    now = current_minute()
    materialiser = Materialiser(store, horizon=HOUR, clock=lambda: now)
    reports = await asyncio.gather(materialiser.run([PARTITION]), materialiser.run([PARTITION]))
    rows = await executions(store, job)
    assert [e.key.scheduled_for for e in rows] == [
        now.replace(second=0) + timedelta(minutes=10 * n) for n in range(1, 7)
    ]
    assert sum(r.pending for r in reports) == 6
    again = await materialiser.run([PARTITION])
    assert (again.jobs, again.pending, again.skipped) == (0, 0, 0)
    assert await materialiser.horizon_lag([PARTITION]) == timedelta(0)


@pytest.mark.parametrize(
    ("policy", "fired_missed"),
    [(MisfirePolicy.SKIP, 0), (MisfirePolicy.FIRE_ONCE, 1), (MisfirePolicy.FIRE_ALL, 10)],
)
async def test_a_six_hour_outage_is_caught_up_by_policy(
    store: Store, database_dsn: str, policy: MisfirePolicy, fired_missed: int
) -> None:
    owner = await make.tenant(store)
    job = await cron_job(store, owner, misfire=policy, misfire_replay_cap=10,
                         misfire_grace=timedelta(minutes=5))  # fmt: skip
    now = current_minute()
    backdate(database_dsn, job, now - 6 * HOUR)
    materialiser = Materialiser(store, horizon=HOUR, clock=lambda: now)
    assert await materialiser.horizon_lag([PARTITION]) == 6 * HOUR

    report = await materialiser.run([PARTITION])

    rows = await executions(store, job)
    past = [e for e in rows if e.key.scheduled_for < now]
    future = [e for e in rows if e.key.scheduled_for >= now]
    assert len(past) == 36, "every run of the six hours is recorded"
    assert len(future) == 6
    assert {e.status for e in future} == {ExecutionStatus.PENDING}
    # The run 30 s ago is inside the grace: it fires, late, whatever the policy.
    assert past[-1].status is ExecutionStatus.PENDING
    missed = past[:-1]
    fired = [e for e in missed if e.status is ExecutionStatus.PENDING]
    skipped = [e for e in missed if e.status is ExecutionStatus.SKIPPED]
    assert len(fired) == fired_missed
    assert fired == missed[len(missed) - fired_missed :], (
        "the latest missed runs are the ones fired"
    )
    assert len(skipped) == 35 - fired_missed
    assert all(e.reason and e.reason.startswith("misfire:") for e in skipped)
    assert (report.skipped, report.pending) == (35 - fired_missed, fired_missed + 1 + 6)
    assert await materialiser.horizon_lag([PARTITION]) == timedelta(0)


async def test_paused_jobs_are_not_expanded(store: Store) -> None:
    owner = await make.tenant(store)
    job = await cron_job(store, owner)
    await store.jobs.pause(owner.id, job.id)
    now = current_minute()
    report = await Materialiser(store, horizon=HOUR, clock=lambda: now).run([PARTITION])
    assert report.jobs == 0
    assert await executions(store, job) == []


async def test_an_edit_carries_over_or_supersedes_pending_runs(store: Store) -> None:
    owner = await make.tenant(store)
    job = await cron_job(store, owner)
    now = current_minute()
    materialiser = Materialiser(store, horizon=HOUR, clock=lambda: now)
    await materialiser.run([PARTITION])
    every_20 = dataclasses.replace(
        job.spec, schedule=Schedule(ScheduleKind.CRON, cron="*/20 * * * *")
    )
    edited = await store.jobs.update(owner.id, job.id, job.version, every_20)

    report = await materialiser.run([PARTITION])

    rows = await executions(store, job)
    kept = [e for e in rows if e.status is ExecutionStatus.PENDING]
    gone = [e for e in rows if e.status is ExecutionStatus.SKIPPED]
    assert {e.key.scheduled_for.minute for e in kept} == {0, 20, 40}
    assert {e.job_version for e in kept} == {edited.version}
    assert {e.key.scheduled_for.minute for e in gone} == {10, 30, 50}
    assert {e.reason for e in gone} == {"superseded"}
    assert (report.carried, report.superseded) == (len(kept), len(gone))


async def test_lag_counts_a_never_materialised_job_from_its_creation(
    store: Store, database_dsn: str
) -> None:
    owner = await make.tenant(store)
    job = await cron_job(store, owner)
    now = current_minute()
    with psycopg.connect(database_dsn, autocommit=True) as conn:
        conn.execute("UPDATE jobs SET created_at = %s WHERE id = %s", (now - 2 * HOUR, job.id))
    assert (
        await Materialiser(store, horizon=HOUR, clock=lambda: now).horizon_lag([PARTITION])
        == 2 * HOUR
    )


async def test_an_edit_leaves_manual_runs_alone(store: Store) -> None:
    owner = await make.tenant(store)
    job = await cron_job(store, owner)
    now = current_minute()
    materialiser = Materialiser(store, horizon=HOUR, clock=lambda: now)
    await materialiser.run([PARTITION])
    manual_at = now + timedelta(minutes=7)
    manual = dataclasses.replace(make.occurrence(job, manual_at), trigger=Trigger.MANUAL)
    await store.occurrences.insert([manual])
    every_20 = dataclasses.replace(
        job.spec, schedule=Schedule(ScheduleKind.CRON, cron="*/20 * * * *")
    )
    await store.jobs.update(owner.id, job.id, job.version, every_20)
    await materialiser.run([PARTITION])
    kept = await store.executions.get(owner.id, manual.key)
    assert (kept.status, kept.trigger) == (ExecutionStatus.PENDING, Trigger.MANUAL)
