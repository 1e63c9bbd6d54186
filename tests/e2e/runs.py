"""Runs for end-to-end tests: one-off jobs registered in the cluster's database, their
statuses and lateness read back, and waiting until they all reach a state."""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.e2e.cluster import FAST, Cluster
from wheel.api.server.registration import register_jobs
from wheel.model.ids import TenantId
from wheel.model.jobs import Job, JobSpec, Policies, Schedule, ScheduleKind
from wheel.store import Store

PARTITIONS = int(FAST["partitions"])


async def jobs(
    store: Store,
    tenant: TenantId,
    task: str,
    instants: Sequence[datetime],
    payload: bytes = b"",
    **policies: Any,
) -> list[Job]:
    specs = [
        JobSpec(name=f"{task}-{uuid.uuid4().hex[:8]}", task_type=task,
                schedule=Schedule(kind=ScheduleKind.AT, at=instant),
                payload=payload, policies=Policies(**policies))
        for instant in instants
    ]  # fmt: skip
    registered = await register_jobs(store, tenant, specs, partitions=PARTITIONS)
    return [r.job for r in registered.registered]


def statuses(cluster: Cluster, job_ids: Sequence[object]) -> dict[str, int]:
    rows = cluster.query(
        "SELECT status::text, count(*) FROM executions WHERE job_id = ANY(%s) GROUP BY 1",
        list(job_ids),
    )
    return {status: count for status, count in rows}


def whole_second(ahead_s: float) -> datetime:
    return (datetime.now(UTC) + timedelta(seconds=ahead_s)).replace(microsecond=0)


def lateness_ms(cluster: Cluster, job_ids: Sequence[object]) -> list[float]:
    rows = cluster.query(
        "SELECT extract(epoch FROM started_at - scheduled_for) * 1000 FROM executions"
        " WHERE job_id = ANY(%s) AND status = 'succeeded'",
        list(job_ids),
    )
    return sorted(float(r[0]) for r in rows)


def summary(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: none"
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return (f"{name}: n={len(values)} p50={statistics.median(values):.1f} ms "
            f"p99={p99:.1f} ms max={values[-1]:.1f} ms")  # fmt: skip


async def settle(
    cluster: Cluster, job_ids: Sequence[object], final: str, within: float = 60
) -> None:
    expected = len(job_ids)
    try:
        await cluster.wait_until(
            lambda: statuses(cluster, job_ids).get(final, 0) == expected, within
        )
    except TimeoutError:
        pytest.fail(f"{statuses(cluster, job_ids)} != {expected} {final}\n{cluster.dump_logs()}")


def running_on(cluster: Cluster, job_ids: Sequence[uuid.UUID]) -> set[str]:
    rows = cluster.query(
        "SELECT executor_id FROM executions WHERE job_id = ANY(%s) AND status = 'running'",
        list(job_ids),
    )
    return {str(r[0]) for r in rows}


def dispatch_delays(
    cluster: Cluster, job_ids: Sequence[uuid.UUID], back_at: datetime
) -> list[float]:
    """Seconds from max(Postgres back, the run's instant) to its first dispatch after that."""
    rows = cluster.query(
        "SELECT e.scheduled_for, min(a.started_at) FROM executions e"
        " JOIN attempts a USING (job_id, scheduled_for)"
        " WHERE e.job_id = ANY(%s) AND a.started_at IS NOT NULL GROUP BY e.job_id, 1",
        list(job_ids),
    )
    assert len(rows) == len(job_ids), f"{len(rows)} of {len(job_ids)} runs started"
    return sorted((started - max(back_at, due)).total_seconds() for due, started in rows)


def assert_no_stale_result_accepted(cluster: Cluster, job_ids: Sequence[uuid.UUID]) -> None:
    """Per run: fences grow with attempts, only the last attempt may succeed, and the run's
    fence is its last attempt's (a stale result would succeed under an older fence)."""
    rows = cluster.query(
        "SELECT e.job_id, e.fence, array_agg(a.fence ORDER BY a.number),"
        " array_agg(a.outcome::text ORDER BY a.number)"
        " FROM executions e JOIN attempts a USING (job_id, scheduled_for)"
        " WHERE e.job_id = ANY(%s) GROUP BY e.job_id, e.fence",
        list(job_ids),
    )
    assert len(rows) == len(job_ids)
    for job_id, fence, fences, outcomes in rows:
        assert fences == sorted(set(fences)), f"{job_id}: fences {fences}"
        assert fences[-1] == fence, f"{job_id}: run fence {fence}, attempts {fences}"
        assert "succeeded" not in outcomes[:-1], f"{job_id}: {outcomes}"
        assert outcomes[-1] == "succeeded", f"{job_id}: {outcomes}"


async def made(
    dsn: str, tenant: TenantId, task: str, instants: Sequence[datetime], **options: Any
) -> list[uuid.UUID]:
    """Register one-off jobs through a store of their own: one that outlives a broken
    Postgres connection (an outage, a failover) without carrying it."""
    store = await Store.open(dsn, min_size=1, max_size=1, timeout_s=5)
    try:
        return [job.id for job in await jobs(store, tenant, task, instants, **options)]
    finally:
        await store.close()


def tenant_of(dsn: str, name: str) -> TenantId:
    """A tenant made with plain SQL (no store held open across a fault)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "INSERT INTO tenants (id, name) VALUES (%s, %s) RETURNING id", (uuid.uuid4(), name)
        ).fetchone()
    assert row is not None
    return TenantId(row[0])
