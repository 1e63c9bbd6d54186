"""Small builders of tenants, jobs and occurrences for store tests."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from wheel.model.executions import NewOccurrence
from wheel.model.ids import ExecutionKey, PartitionId, new_job_id, partition_of
from wheel.model.jobs import Job, JobSpec, Policies, Schedule, ScheduleKind
from wheel.model.tenants import Tenant
from wheel.store import Store

PARTITIONS = 16


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
