"""Tenants and API tokens; tokens are stored as their SHA-256, never in clear.

A token is 256 random bits (`whl_` + base64url), so a fast hash is the right
one: there is nothing to brute-force that a slow password hash would protect.
The secret is returned once, at creation.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg

from wheel.errors import Conflict, InvalidArgument, NotFound
from wheel.model.http_tasks import host_patterns
from wheel.model.ids import TenantId, new_tenant_id
from wheel.model.jobs import MAX_NAME_LENGTH
from wheel.model.tenants import ExecutorCredential, Tenant, TokenInfo, default_executor_ids
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.translate import translated

TOKEN_PREFIX = "whl_"


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def _tenant(row: Sequence[Any]) -> Tenant:
    return Tenant(TenantId(row[0]), row[1], row[2], row[3], row[4], tuple(row[5]))


class Tenants:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def create(
        self, name: str, *, max_in_flight: int = 1000, http_hosts: Sequence[str] = ()
    ) -> Tenant:
        if not name.strip():
            raise InvalidArgument("name", "must not be empty")
        if max_in_flight < 1:
            raise InvalidArgument("max_in_flight", "must be at least 1")
        params = {"id": new_tenant_id(), "name": name, "max_in_flight": max_in_flight,
                  "http_hosts": list(host_patterns("http_hosts", http_hosts))}  # fmt: skip
        async with translated(), self._pool.connection() as conn:
            try:
                cursor = await conn.execute(sql("insert_tenant"), params)
            except psycopg.errors.UniqueViolation:
                raise Conflict(f"a tenant named {name!r} exists") from None
            row = await cursor.fetchone()
        assert row is not None
        return _tenant(row)

    async def by_name(self, name: str) -> Tenant:
        """The tenant named `name`, or NotFound."""
        async with translated(), self._pool.connection() as conn:
            row = await (await conn.execute(sql("tenant_by_name"), {"name": name})).fetchone()
        if row is None:
            raise NotFound("tenant", name)
        return _tenant(row)

    async def load(self, tenant_id: TenantId) -> Tenant | None:
        """The tenant with its in-flight count, or None."""
        async with translated(), self._pool.connection() as conn:
            row = await (await conn.execute(sql("tenant_by_id"), {"id": tenant_id})).fetchone()
        return None if row is None else _tenant(row)

    async def set_http_hosts(self, tenant_id: TenantId, hosts: Sequence[str]) -> Tenant:
        """Choose the hosts the tenant's HTTP tasks may POST to (none: any); NotFound."""
        params = {"id": tenant_id, "http_hosts": list(host_patterns("http_hosts", hosts))}
        async with translated(), self._pool.connection() as conn:
            row = await (await conn.execute(sql("set_http_hosts"), params)).fetchone()
        if row is None:
            raise NotFound("tenant", tenant_id)
        return _tenant(row)

    async def create_token(self, tenant_id: TenantId, name: str) -> tuple[TokenInfo, str]:
        """A new token for the tenant: its record and the secret (shown once, stored hashed)."""
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        params = {
            "id": uuid.uuid4(),
            "tenant_id": tenant_id,
            "name": name,
            "token_sha256": token_hash(secret),
        }
        async with translated(), self._pool.connection() as conn:
            row = await (await conn.execute(sql("insert_token"), params)).fetchone()
        if row is None:
            raise NotFound("tenant", tenant_id)
        return TokenInfo(row[0], TenantId(row[1]), row[2], row[3], row[4]), secret

    async def create_executor_token(
        self, name: str, *, executor_ids: Sequence[str] = ()
    ) -> tuple[TokenInfo, str]:
        """A new executor token (it opens the executor stream; it is no tenant's).

        `executor_ids` are the ids (globs) its holder may connect as; by default
        `name` and `name-*`.
        """
        globs = tuple(executor_ids) or default_executor_ids(name)
        for glob in globs:
            if not glob or len(glob) > MAX_NAME_LENGTH:
                raise InvalidArgument("executor_ids", f"{glob!r} is empty or too long")
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        params = {
            "id": uuid.uuid4(),
            "name": name,
            "token_sha256": token_hash(secret),
            "executor_ids": list(globs),
        }
        async with translated(), self._pool.connection() as conn:
            row = await (await conn.execute(sql("insert_executor_token"), params)).fetchone()
        assert row is not None
        return TokenInfo(row[0], None, row[2], row[3], row[4]), secret

    async def authenticate_executor(self, token: str) -> ExecutorCredential | None:
        """What a live executor token allows; None for any other token."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(
                sql("authenticate_executor"), {"token_sha256": token_hash(token)}
            )
            row = await cursor.fetchone()
        return None if row is None else ExecutorCredential(row[0], tuple(row[1]))

    async def authenticate(self, token: str) -> TenantId | None:
        """The tenant a live token belongs to; None for an unknown or revoked one."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(sql("authenticate"), {"token_sha256": token_hash(token)})
            row = await cursor.fetchone()
        return TenantId(row[0]) if row else None

    async def revoke_token(self, token_id: uuid.UUID) -> TokenInfo:
        async with translated(), self._pool.connection() as conn:
            row = await (await conn.execute(sql("revoke_token"), {"id": token_id})).fetchone()
        if row is None:
            raise NotFound("token", token_id)
        return TokenInfo(row[0], TenantId(row[1]) if row[1] else None, row[2], row[3], row[4])
