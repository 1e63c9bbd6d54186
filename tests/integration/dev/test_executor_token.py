"""`wheel dev` started again keeps the token of your own executors, as it keeps the
tenant's: an executor started from the banner goes on working after a restart."""

from __future__ import annotations

from wheel.dev.examples import ANY_EXECUTOR, ensure_executor_token, ensure_tenant, ensure_token
from wheel.store import Store

NAME = "wheel dev: your executors"


async def test_your_executors_token_on_record_is_kept_while_it_authenticates(
    store: Store,
) -> None:
    token, new = await ensure_executor_token(store, NAME, previous=None)
    assert new
    credential = await store.tenants.authenticate_executor(token)
    assert credential is not None
    assert credential.executor_ids == ANY_EXECUTOR
    assert await ensure_executor_token(store, NAME, previous=token) == (token, False)
    await store.tenants.revoke_token(credential.token_id)
    replaced, new = await ensure_executor_token(store, NAME, previous=token)
    assert new
    assert replaced != token


async def test_a_tenants_token_or_a_narrower_one_is_not_taken_for_it(store: Store) -> None:
    tenant_token, _ = await ensure_token(store, await ensure_tenant(store), previous=None)
    token, new = await ensure_executor_token(store, NAME, previous=tenant_token)
    assert new
    assert token != tenant_token
    _, narrow = await store.tenants.create_executor_token("dev-executor")
    token, new = await ensure_executor_token(store, NAME, previous=narrow)
    assert new
    assert token != narrow
