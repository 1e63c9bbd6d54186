"""The materialiser's queries: which jobs to expand, cursors, superseding after edits."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from psycopg.rows import dict_row

from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.model.jobs import Job
from wheel.schedule.calendars import Calendar
from wheel.store.calendars import calendar_from_row
from wheel.store.days import by_day, span
from wheel.store.jobs import job_from_row
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.translate import translated

_NIL = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class Carry:
    """What becomes of a pending occurrence made from an older version of its job."""

    key: ExecutionKey
    version: int
    keep: bool
    """True: the new version has this run too (it moves to the version); False: superseded."""
    fire_at: datetime
    priority: int
    deadline: timedelta | None = None
    """The new version's deadline: a kept scheduled run not yet marked missed gets it."""
    reason: str | None = None
    """Not kept because a business calendar now skips it: why (None: 'superseded')."""


class Materialising:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def jobs_due(
        self,
        partitions: Collection[PartitionId],
        target: datetime,
        *,
        after: JobId | None = None,
        limit: int = 500,
    ) -> list[Job]:
        """Active recurring jobs needing runs up to `target` (or made from an old version)."""
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(
                sql("jobs_to_materialise"),
                {
                    "partitions": list(partitions),
                    "target": target,
                    "after_id": after or _NIL,
                    "limit": limit,
                },
            )
            return [job_from_row(row) for row in await cursor.fetchall()]

    async def advance(self, cursors: Sequence[tuple[Job, datetime]]) -> set[JobId]:
        """Set each job's cursor (forward only) unless it was edited since it was read."""
        if not cursors:
            return set()
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(
                sql("advance_cursors"),
                {
                    "job_ids": [job.id for job, _ in cursors],
                    "versions": [job.version for job, _ in cursors],
                    "materialised_tos": [to for _, to in cursors],
                },
            )
            return {JobId(row[0]) for row in await cursor.fetchall()}

    async def outdated_pending(self, jobs: Sequence[Job]) -> list[ExecutionKey]:
        """Pending occurrences of `jobs` made from older versions of them."""
        if not jobs:
            return []
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(
                sql("outdated_pending"),
                {"job_ids": [j.id for j in jobs], "versions": [j.version for j in jobs]},
            )
            return [ExecutionKey(JobId(job_id), at) for job_id, at in await cursor.fetchall()]

    async def supersede(self, decisions: Sequence[Carry]) -> None:
        """Carry kept occurrences over to the new version; skip the rest as superseded."""
        if not decisions:
            return
        async with translated(), self._pool.connection() as conn:
            for day in by_day(decisions, lambda d: d.key.scheduled_for):
                await conn.execute(
                    sql("supersede"),
                    {
                        "job_ids": [d.key.job_id for d in day],
                        "scheduled_fors": [d.key.scheduled_for for d in day],
                        "versions": [d.version for d in day],
                        "keep": [d.keep for d in day],
                        "fire_ats": [d.fire_at for d in day],
                        "priorities": [d.priority for d in day],
                        "deadline_ms": [
                            d.deadline // timedelta(milliseconds=1) if d.deadline else None
                            for d in day
                        ],
                        "reasons": [d.reason for d in day],
                        **span([d.key.scheduled_for for d in day]),
                    },
                    prepare=False,  # planned as the one day partition: see days
                )

    async def oldest_cursor(self, partitions: Collection[PartitionId]) -> datetime | None:
        """The least materialised active recurring job's cursor (its creation if it has none)."""
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(sql("oldest_cursor"), {"partitions": list(partitions)})
            row = await cursor.fetchone()
        return row[0] if row else None

    async def calendars_of(self, jobs: Sequence[Job]) -> dict[tuple[TenantId, str], Calendar]:
        """The business calendars `jobs` name, by (tenant, name): one statement. A job
        names only its own tenant's calendars."""
        pairs = {(job.tenant_id, name) for job in jobs for name in job.spec.policies.calendars}
        if not pairs:
            return {}
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(
                sql("calendars_of_jobs"),
                {"tenant_ids": [t for t, _ in pairs], "names": [n for _, n in pairs]},
            )
            rows = await cursor.fetchall()
        return {
            (TenantId(row["tenant_id"]), row["name"]): calendar_from_row(row).calendar
            for row in rows
        }

    async def calendar_skips(self, jobs: Sequence[Job], now: datetime) -> list[ExecutionKey]:
        """Runs of `jobs` after `now` that a calendar skipped under an older version."""
        if not jobs:
            return []
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(
                sql("calendar_skips"),
                {
                    "job_ids": [j.id for j in jobs],
                    "versions": [j.version for j in jobs],
                    "now": now,
                },
            )
            return [ExecutionKey(JobId(job_id), at) for job_id, at in await cursor.fetchall()]

    async def replan_calendar_skips(self, decisions: Sequence[Carry]) -> None:
        """Calendar-skipped runs under the new version: pending again where `keep` (at
        `fire_at`), else skipped with `reason`."""
        if not decisions:
            return
        async with translated(), self._pool.connection() as conn:
            for day in by_day(decisions, lambda d: d.key.scheduled_for):
                await conn.execute(
                    sql("replan_calendar_skips"),
                    {
                        "job_ids": [d.key.job_id for d in day],
                        "scheduled_fors": [d.key.scheduled_for for d in day],
                        "versions": [d.version for d in day],
                        "runs": [d.keep for d in day],
                        "fire_ats": [d.fire_at for d in day],
                        "priorities": [d.priority for d in day],
                        "reasons": [d.reason for d in day],
                        **span([d.key.scheduled_for for d in day]),
                    },
                    prepare=False,  # planned as the one day partition: see days
                )
