"""Tenants and their API tokens."""

from __future__ import annotations

import fnmatch
import uuid
from dataclasses import dataclass
from datetime import datetime

from wheel.model.ids import TenantId


@dataclass(frozen=True, slots=True)
class Tenant:
    id: TenantId
    name: str
    max_in_flight: int
    """At most this many of the tenant's executions are dispatched or running at once,
    across the cluster."""
    created_at: datetime
    in_flight: int = 0
    """Its executions dispatched or running now (as last committed)."""
    http_hosts: tuple[str, ...] = ()
    """The hosts its HTTP tasks may POST to (empty: any the nodes' egress allows), set by an
    operator, never by the tenant (wheel.model.http_tasks.host_allowed)."""


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A token as stored: never the secret itself, only its hash."""

    id: uuid.UUID
    tenant_id: TenantId | None
    """None for an executor's token."""
    name: str
    created_at: datetime
    revoked_at: datetime | None


@dataclass(frozen=True, slots=True)
class ExecutorCredential:
    """What a live executor token lets its holder be."""

    token_id: uuid.UUID
    executor_ids: tuple[str, ...]
    """Globs (`fnmatch`, case-sensitive): the executor ids the token may connect as."""

    def allows(self, executor_id: str) -> bool:
        return any(fnmatch.fnmatchcase(executor_id, glob) for glob in self.executor_ids)


def default_executor_ids(name: str) -> tuple[str, ...]:
    """An executor token named `name` allows the id `name` and `name-*` unless told otherwise:
    a Deployment's pods (`wheel-executor-7d9f...`) under a token named after it."""
    return (name, f"{name}-*")
