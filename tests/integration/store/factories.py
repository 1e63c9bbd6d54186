"""Small builders of tenants, jobs and occurrences for store tests."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from wheel.model.executions import AttemptResult, ExecutionStatus, NewOccurrence, Outcome
from wheel.model.ids import ExecutionKey, PartitionId, new_job_id, partition_of
from wheel.model.jobs import Job, JobSpec, Policies, Schedule, ScheduleKind
from wheel.model.tenants import Tenant
from wheel.store import Store

PARTITIONS = 16
HOOK = "https://hooks.example.com/wheel"
S = ExecutionStatus


async def tenant(store: Store, name: str | None = None) -> Tenant:
    return await store.tenants.create(name or f"tenant-{uuid.uuid4().hex[:8]}")


async def job(
    store: Store, owner: Tenant, *, partition: int | None = None, **policies: object
) -> Job:
    job_id = new_job_id()
    spec = JobSpec(
        name=f"every minute {str(job_id)[:8]}",  # names are unique per tenant
        task_type="report",
        schedule=Schedule(kind=ScheduleKind.CRON, cron="* * * * *"),
        payload=b'{"to": "priya"}',
        policies=Policies(**policies),  # type: ignore[arg-type]
    )
    where = PartitionId(partition) if partition is not None else partition_of(job_id, PARTITIONS)
    return await store.jobs.create(owner.id, job_id, where, spec)


def occurrence(of: Job, at: datetime, *, fire_at: datetime | None = None) -> NewOccurrence:
    return NewOccurrence(
        key=ExecutionKey(of.id, at),
        tenant_id=of.tenant_id,
        partition=of.partition,
        job_version=of.version,
        fire_at=fire_at or at,
        priority=of.spec.policies.priority,
    )


def minutes(start: datetime, count: int) -> list[datetime]:
    return [start + timedelta(minutes=n) for n in range(count)]


def soon() -> datetime:
    """A whole minute a little in the future."""
    return (datetime.now(UTC) + timedelta(minutes=2)).replace(second=0, microsecond=0)


async def failed_run(store: Store, job: Job, at: datetime, attempts: int) -> ExecutionKey:
    """`job`'s run at `at` through `attempts` failed attempts, claimed and recorded as nodes do."""
    key = ExecutionKey(job.id, at)
    await store.occurrences.insert([occurrence(job, at)])
    epochs = {PartitionId(job.partition): 1}
    await store.occurrences.set_epochs(epochs, node_id="n")
    for n in range(attempts):
        (claim,) = await store.occurrences.claim([key], epochs, lease_s=30)
        await store.occurrences.record_results(
            [
                AttemptResult(
                    key, claim.fence, Outcome.FAILED, executor_id="ex", error=f"boom {n}\ntrace"
                )
            ]
        )
    return key


async def hooked(store: Store, on: tuple[S, ...] = (S.DEAD, S.NEEDS_REVIEW)) -> Tenant:
    """A new tenant whose webhook is HOOK."""
    owner = await tenant(store)
    await store.webhooks.set(owner.id, url=HOOK, on=on)
    return owner
