"""A tenant's webhook settings: URL, the statuses announced, the signing secret.

The secret signs notifications, so unlike a token it must be kept readable;
it is made here (256 random bits), shown to the tenant on request and never
logged. A rotation keeps the previous secret signing for a day, so receivers
can move to the new one without dropping a notification.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from psycopg.rows import dict_row

from wheel.errors import NotFound
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import TenantId
from wheel.model.notifications import Webhook
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.translate import translated

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_hex(32)


def _webhook(row: dict[str, Any] | None, tenant_id: TenantId) -> Webhook:
    if row is None:
        raise NotFound("tenant", tenant_id)
    return Webhook(
        url=row["url"],
        on=tuple(ExecutionStatus(s) for s in row["on_statuses"]),
        secret=row["secret"],
        secret_rotated_at=row["secret_rotated_at"],
    )


class Webhooks:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def get(self, tenant_id: TenantId) -> Webhook:
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("webhook_of_tenant"), {"tenant_id": tenant_id})
            return _webhook(await cursor.fetchone(), tenant_id)

    async def http_task_settings(
        self, tenant_id: TenantId
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The secrets that sign the tenant's HTTP tasks now (its secret, and for a day
        after a rotation the previous one too), and the hosts they may reach."""
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(sql("http_task_settings"), {"tenant_id": tenant_id})
            row = await cursor.fetchone()
        if row is None:
            raise NotFound("tenant", tenant_id)
        return tuple(s for s in row[:2] if s), tuple(row[2])

    async def set(
        self,
        tenant_id: TenantId,
        *,
        url: str,
        on: Sequence[ExecutionStatus],
        rotate_secret: bool = False,
    ) -> Webhook:
        """Replace the tenant's webhook (an empty URL turns it off); validated by the caller."""
        params = {
            "tenant_id": tenant_id,
            "url": url or None,
            "on_statuses": [s.value for s in on],
            "secret": new_secret() if rotate_secret else None,
        }
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("set_webhook"), params)
            return _webhook(await cursor.fetchone(), tenant_id)
