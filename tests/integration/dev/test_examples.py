"""`wheel dev` started again on the same data: the same tenant, token and examples, no copies."""

from __future__ import annotations

from datetime import UTC, datetime

from wheel.dev.examples import ensure_tenant, ensure_token, seed_examples
from wheel.store import Store


async def _job_names(store: Store) -> list[str]:
    async with store.pool.connection() as conn:
        cursor = await conn.execute("SELECT name FROM jobs ORDER BY name")
        return [row[0] for row in await cursor.fetchall()]


async def test_the_dev_tenant_is_made_once(store: Store) -> None:
    first = await ensure_tenant(store)
    assert await ensure_tenant(store) == first


async def test_a_token_on_record_is_kept_while_it_authenticates(store: Store) -> None:
    tenant = await ensure_tenant(store)
    token, new = await ensure_token(store, tenant, previous=None)
    assert new
    assert await store.tenants.authenticate(token) == tenant
    assert await ensure_token(store, tenant, previous=token) == (token, False)
    replaced, new = await ensure_token(store, tenant, previous="whl_not-a-token")
    assert new
    assert replaced != token


async def test_a_token_of_another_tenant_is_not_reused(store: Store) -> None:
    other = (await store.tenants.create("someone-else")).id
    _, theirs = await store.tenants.create_token(other, "theirs")
    tenant = await ensure_tenant(store)
    token, new = await ensure_token(store, tenant, previous=theirs)
    assert new
    assert await store.tenants.authenticate(token) == tenant


async def test_examples_are_made_once_and_only_where_missing(store: Store) -> None:
    tenant = await ensure_tenant(store)
    made = await seed_examples(store, tenant, partitions=16, now=datetime.now(UTC))
    assert [s.name for s in made] == ["hello", "tick", "always-fails", "london-every-minute"]
    assert await seed_examples(store, tenant, partitions=16, now=datetime.now(UTC)) == []
    assert await _job_names(store) == sorted(s.name for s in made)
    async with store.pool.connection() as conn:
        await conn.execute("DELETE FROM executions WHERE job_id IN"
                           " (SELECT id FROM jobs WHERE name = 'hello')")  # fmt: skip
        await conn.execute("DELETE FROM jobs WHERE name = 'hello'")
    again = await seed_examples(store, tenant, partitions=16, now=datetime.now(UTC))
    assert [s.name for s in again] == ["hello"]
