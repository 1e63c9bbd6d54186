"""The notification outbox: notifications due to be sent, each try's outcome, and retention.

Rows are written by a trigger on `executions` (migration 0008) in the same
statement that gives a run a notifiable status, so a notification exists
exactly when the status does. Senders take due rows for one try each
(`claim`): the try is counted and `next_at` moves a lease ahead, so a sender
that dies mid-try leaves the row due again when the lease ends. Only the try
that took a row may record its outcome (`tried`): a sender that outlived
its lease cannot overwrite a later try's result.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg.rows import dict_row

from wheel.model.executions import ExecutionStatus
from wheel.model.ids import ExecutionKey, JobId, TenantId
from wheel.model.notifications import Delivery, DeliveryState
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.translate import translated


@dataclass(frozen=True, slots=True)
class Due:
    """A notification taken for one try, with what its body and signature need."""

    id: str
    tenant_id: TenantId
    key: ExecutionKey
    job_name: str
    status: ExecutionStatus
    reason: str | None
    attempt: int
    error: str | None
    url: str
    created_at: datetime
    tries: int
    """This try's number (the first is 1): it fences the outcome."""
    secrets: tuple[str, ...]
    """The tenant's secret, then the previous one within a day of a rotation."""
    event: str | None = None
    """None: it announces the run's status; else 'deadline_missed', 'failing' or 'recovered'."""
    deadline_at: datetime | None = None
    """A missed deadline's instant."""
    streak: int | None = None
    """A failure streak's length (its runs that ended dead or needing review)."""
    streak_from: datetime | None = None
    """The instant of a failure streak's first run."""


def _due(row: dict[str, Any]) -> Due:
    return Due(
        id=str(row["id"]),
        tenant_id=TenantId(row["tenant_id"]),
        key=ExecutionKey(JobId(row["job_id"]), row["scheduled_for"]),
        job_name=row["job_name"] or "",
        status=ExecutionStatus(row["status"]),
        reason=row["reason"],
        attempt=row["attempt"],
        error=row["error"],
        url=row["url"],
        created_at=row["created_at"],
        tries=row["tries"],
        secrets=tuple(s for s in (row["secret"], row["previous_secret"]) if s),
        event=row["event"],
        deadline_at=row["deadline_at"],
        streak=row["streak"],
        streak_from=row["streak_from"],
    )


def _delivery(row: dict[str, Any]) -> Delivery:
    if row["delivered_at"] is not None:
        state, next_at = DeliveryState.DELIVERED, None
    elif row["gave_up_at"] is not None:
        state, next_at = DeliveryState.GAVE_UP, None
    else:
        state, next_at = DeliveryState.PENDING, row["next_at"]
    return Delivery(
        id=str(row["id"]),
        status=ExecutionStatus(row["status"]),
        url=row["url"],
        state=state,
        tries=row["tries"],
        created_at=row["created_at"],
        next_at=next_at,
        delivered_at=row["delivered_at"] or row["gave_up_at"],
        last_error=row["last_error"],
        last_status_code=row["last_status_code"],
        event=row["event"],
    )


class Outbox:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def claim(self, node_id: str, *, limit: int, lease_s: float) -> list[Due]:
        """Up to `limit` due notifications, soonest first, each taken for one try."""
        params = {"node_id": node_id, "limit": limit, "lease_s": lease_s}
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("claim_notifications"), params)
            return [_due(row) for row in await cursor.fetchall()]

    async def tried(
        self,
        due: Due,
        *,
        delivered: bool,
        give_up: bool = False,
        retry_in_s: float = 0.0,
        error: str | None = None,
        status_code: int | None = None,
    ) -> bool:
        """Record how `due`'s try went; False when a later try holds the row now."""
        params = {
            "id": due.id,
            "tries": due.tries,
            "delivered": delivered,
            "give_up": give_up,
            "retry_in_s": retry_in_s,
            "error": error,
            "status_code": status_code,
        }
        async with translated(), self._pool.connection() as conn:
            row = await (await conn.execute(sql("notification_tried"), params)).fetchone()
        return row is not None

    async def of_run(self, tenant_id: TenantId, key: ExecutionKey) -> list[Delivery]:
        """The notifications of one run, oldest first (what explain shows)."""
        params = {"tenant_id": tenant_id, "job_id": key.job_id, "scheduled_for": key.scheduled_for}
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("notifications_of_run"), params)
            return [_delivery(row) for row in await cursor.fetchall()]

    async def prune(self, before: datetime) -> int:
        """Delete delivered and abandoned notifications made before `before`; how many."""
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(sql("prune_notifications"), {"before": before})
            return cursor.rowcount
