"""Tokens authenticate their tenant, are stored only as a hash, and can be revoked."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from tests.integration.store import factories as make
from wheel.errors import Conflict, NotFound
from wheel.model.ids import TenantId
from wheel.store import Store


async def test_a_token_names_its_tenant_until_revoked(store: Store, database_dsn: str) -> None:
    owner = await make.tenant(store)
    info, secret = await store.tenants.create_token(owner.id, "ci")
    assert await store.tenants.authenticate(secret) == owner.id
    assert await store.tenants.authenticate(secret + "x") is None
    assert await store.tenants.authenticate("") is None
    with psycopg.connect(database_dsn) as conn:
        dump = conn.execute("SELECT row_to_json(t)::text FROM api_tokens t").fetchall()
    assert secret not in str(dump), "only the hash is stored"
    revoked = await store.tenants.revoke_token(info.id)
    assert revoked.revoked_at is not None
    assert await store.tenants.authenticate(secret) is None


async def test_tenant_names_are_unique_and_tokens_need_a_tenant(store: Store) -> None:
    await store.tenants.create("acme")
    with pytest.raises(Conflict, match="acme"):
        await store.tenants.create("acme")
    with pytest.raises(NotFound):
        await store.tenants.create_token(TenantId(uuid.uuid4()), "orphan")
    with pytest.raises(NotFound):
        await store.tenants.revoke_token(uuid.uuid4())


async def test_a_tenant_is_found_by_name(store: Store) -> None:
    created = await store.tenants.create("globex")
    assert await store.tenants.by_name("globex") == created
    with pytest.raises(NotFound):
        await store.tenants.by_name("initech")
