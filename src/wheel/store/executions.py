"""Executions as tenants see them: list, get with every attempt, retry, cancel."""

from __future__ import annotations

import builtins
from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from psycopg.rows import dict_row

from wheel.errors import InvalidTransition, NotFound
from wheel.model.executions import (
    OVERDUE_AFTER_S,
    Attempt,
    Execution,
    ExecutionStatus,
    LastRun,
    Outcome,
    Retry,
    RunsToWatch,
    Trigger,
)
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.store import pagination
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.translate import translated

_BEGINNING = datetime(1, 1, 2, tzinfo=UTC)
_END = datetime(9999, 1, 1, tzinfo=UTC)
_MAX_UUID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
_MIN_UUID = "00000000-0000-0000-0000-000000000000"
RETRYABLE = (ExecutionStatus.DEAD, ExecutionStatus.NEEDS_REVIEW)
CANCELLABLE = (ExecutionStatus.PENDING,)


def _instant(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _attempt(made: dict[str, Any]) -> Attempt:
    """An attempt from its JSON object (see get_execution.sql)."""
    return Attempt(
        number=made["number"],
        fence=made["fence"],
        executor_id=made["executor_id"],
        started_at=_instant(made["started_at"]),
        finished_at=datetime.fromisoformat(made["finished_at"]),
        outcome=Outcome(made["outcome"]),
        error=made["error"],
    )


def _retries(made: list[dict[str, Any]] | None) -> tuple[Retry, ...]:
    return tuple(
        Retry(at=datetime.fromisoformat(r["at"]), by=r["by"], after_attempt=r["after_attempt"])
        for r in made or ()
    )


def execution_from_row(row: dict[str, Any], attempts: tuple[Attempt, ...] = ()) -> Execution:
    return Execution(
        key=ExecutionKey(JobId(row["job_id"]), row["scheduled_for"]),
        tenant_id=TenantId(row["tenant_id"]),
        partition=PartitionId(row["partition"]),
        job_version=row["job_version"],
        status=ExecutionStatus(row["status"]),
        fire_at=row["fire_at"],
        attempt=row["attempt"],
        fence=row["fence"],
        lease_until=row["lease_until"],
        executor_id=row["executor_id"],
        priority=row["priority"],
        trigger=Trigger(row["trigger"]),
        reason=row["reason"],
        error=row["error"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        attempts=attempts,
        dispatched_at=row["dispatched_at"],
        claimed_by=row["claimed_by"],
        retries=_retries(row.get("retries")),
    )


class RecentExecution(NamedTuple):
    """One of a tenant's newest executions, with its job's name (see `Executions.recent`)."""

    job_name: str
    job_id: JobId
    scheduled_for: datetime
    fire_at: datetime
    status: str
    attempt: int
    max_attempts: int
    executor_id: str | None
    started_at: datetime | None
    note: str | None
    """The last error, or why it was skipped or cancelled."""
    finished_at: datetime | None
    job_status: str
    """The job's: 'paused' makes its pending runs wait."""
    trigger: str
    """Why it exists: 'schedule', 'manual' or 'backfill'."""
    paused_by: str = ""
    """While its job is paused: who paused it, why and when (wheel.model.pauses)."""
    pause_note: str = ""
    paused_at: datetime | None = None


ATTENTION_RECENT_RUNS = 10
"""`attention` reads at most this many of a job's latest settled runs for its failures."""


class Executions:
    """A tenant's view of its executions."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def list(
        self,
        tenant_id: TenantId,
        *,
        job_id: JobId | None = None,
        statuses: Collection[ExecutionStatus] = (),
        scheduled_after: datetime | None = None,
        scheduled_before: datetime | None = None,
        page_size: int = 0,
        page_token: str = "",
        oldest_first: bool = False,
    ) -> tuple[list[Execution], str]:
        """A page of executions, newest scheduled first (soonest first with `oldest_first`),
        and the next page's token ('' at the end)."""
        limit = pagination.page_size(page_size)
        after = pagination.decode(page_token, oldest_first=oldest_first)
        start = (_BEGINNING, _MIN_UUID) if oldest_first else (_END, _MAX_UUID)
        params = {
            "tenant_id": tenant_id,
            "job_id": job_id,
            "statuses": [s.value for s in statuses] or None,
            "scheduled_after": scheduled_after or _BEGINNING,
            "scheduled_before": scheduled_before or _END,
            "after_scheduled_for": after[0] if after else start[0],
            "after_job_id": after[1] if after else start[1],
            "limit": limit,
        }
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            name = "list_executions_of_job" if job_id else "list_executions_of_tenant"
            query = sql(f"{name}_oldest_first" if oldest_first else name)
            await cursor.execute(query, params)
            found = [execution_from_row(row) for row in await cursor.fetchall()]
        if len(found) < limit:
            return found, ""
        last = found[-1].key
        return found, pagination.encode(last.scheduled_for, last.job_id, oldest_first=oldest_first)

    async def get(self, tenant_id: TenantId, key: ExecutionKey) -> Execution:
        """The execution with every attempt, or NotFound (also when it is another tenant's).

        One statement, one snapshot: its status, attempts and retries always agree."""
        where = {"job_id": key.job_id, "scheduled_for": key.scheduled_for, "tenant_id": tenant_id}
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("get_execution"), where)
            row = await cursor.fetchone()
        if row is None:
            raise NotFound("execution", key.id)
        return execution_from_row(row, tuple(_attempt(a) for a in row["attempts_made"]))

    async def retry(
        self, tenant_id: TenantId, key: ExecutionKey, *, by_token: bytes | None = None
    ) -> Execution:
        """Send a dead or needs_review execution back to pending, firing now, for a new try
        with the job's full attempts; the name of the token whose SHA-256 is `by_token` (the
        caller's) is kept with it as who retried ("a person" without one)."""
        return await self._decide(
            tenant_id, key, ExecutionStatus.PENDING, RETRYABLE, "retry", "manual retry",
            by_token=by_token,
        )  # fmt: skip

    async def attention(
        self, tenant_id: TenantId, job_ids: Collection[JobId] | None, now: datetime
    ) -> dict[JobId, RunsToWatch]:
        """The runs that may need a person, for each of the tenant's jobs among `job_ids`
        (None: all of them) that has any: one statement (see attention.sql)."""
        params = {
            "tenant_id": tenant_id,
            "job_ids": None if job_ids is None else list(job_ids),
            "now": now,
            "overdue_before": now - timedelta(seconds=OVERDUE_AFTER_S),
            "recent": ATTENTION_RECENT_RUNS,
        }
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("attention"), params)
            rows = await cursor.fetchall()
        return {
            JobId(row["job_id"]): RunsToWatch(row["due"], row["overdue"], row["failing"])
            for row in rows
        }

    async def in_flight_of_jobs(
        self, tenant_id: TenantId, job_ids: Collection[JobId]
    ) -> dict[JobId, Execution]:
        """For each job that has one, a run of it dispatched or running now (one statement)."""
        if not job_ids:
            return {}
        params = {"tenant_id": tenant_id, "job_ids": list(job_ids)}
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("in_flight_of_jobs"), params)
            rows = await cursor.fetchall()
        found = [execution_from_row(row) for row in rows]
        return {e.key.job_id: e for e in found}

    async def cancel(self, tenant_id: TenantId, key: ExecutionKey) -> Execution:
        """Cancel a pending execution: it will not run."""
        return await self._decide(
            tenant_id, key, ExecutionStatus.CANCELLED, CANCELLABLE, "cancel", "cancelled by user"
        )

    async def _decide(
        self,
        tenant_id: TenantId,
        key: ExecutionKey,
        target: ExecutionStatus,
        allowed_from: tuple[ExecutionStatus, ...],
        operation: str,
        reason: str,
        *,
        by_token: bytes | None = None,
    ) -> Execution:
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(
                sql("set_execution_status"),
                {
                    "job_id": key.job_id,
                    "scheduled_for": key.scheduled_for,
                    "tenant_id": tenant_id,
                    "status": target.value,
                    "reason": reason,
                    "from_statuses": [s.value for s in allowed_from],
                    "by_token": by_token,
                },
            )
            changed = await cursor.fetchone()
            if changed is not None and target is ExecutionStatus.PENDING:
                # Its owner may have loaded past its new fire_at: tell it.
                await conn.execute(
                    sql("notify_due"),
                    {"partition": changed[1], "earliest_ms": 0},
                )
        current = await self.get(tenant_id, key)
        if changed is None:
            state = current.status.value
            if current.status in allowed_from:  # the guard that failed was the job's
                state = f"{state}, of a deleted job"
            raise InvalidTransition("execution", key.id, state, operation)
        return current

    async def recent(
        self, tenant_id: TenantId, *, since: datetime, upcoming_s: float, limit: int
    ) -> builtins.list[RecentExecution]:
        """The newest executions scheduled from `since` to `upcoming_s` from now, newest first."""
        params = {"tenant": tenant_id, "since": since, "upcoming_s": upcoming_s, "limit": limit}
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(sql("recent_executions"), params)
            return [RecentExecution(*record) for record in await cursor.fetchall()]

    async def last_runs(self, job_ids: Collection[JobId], now: datetime) -> dict[JobId, LastRun]:
        """Each job's latest run scheduled by `now` that is not pending (jobs already scoped
        to the caller's tenant: the ids come from its own listing)."""
        if not job_ids:
            return {}
        params = {"job_ids": list(job_ids), "now": now}
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("last_runs"), params)
            rows = await cursor.fetchall()
        return {
            JobId(row["job_id"]): LastRun(
                ExecutionKey(JobId(row["job_id"]), row["scheduled_for"]),
                ExecutionStatus(row["status"]),
                row["finished_at"],
            )
            for row in rows
        }
