"""Tenants and their API tokens."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from wheel.model.ids import TenantId


@dataclass(frozen=True, slots=True)
class Tenant:
    id: TenantId
    name: str
    max_in_flight: int
    """At most this many of the tenant's executions are dispatched or running at once."""
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A token as stored: never the secret itself, only its hash."""

    id: uuid.UUID
    tenant_id: TenantId | None
    """None for an executor's token."""
    name: str
    created_at: datetime
    revoked_at: datetime | None
