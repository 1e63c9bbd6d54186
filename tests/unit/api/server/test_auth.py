"""Bearer tokens: parsing, the short cache, and revocation taking effect after it."""

from __future__ import annotations

import uuid

import pytest

from wheel.api.server.auth import Authenticator, ExecutorAuthenticator, bearer
from wheel.errors import PermissionDenied, Unauthenticated
from wheel.model.ids import TenantId
from wheel.model.tenants import ExecutorCredential

TENANT = TenantId(uuid.uuid4())
CREDENTIAL = ExecutorCredential(uuid.uuid4(), ("pool-a", "pool-a-*"))


class Tokens:
    """The token store, as a collaborator: a dict of live tokens and a lookup count."""

    def __init__(self) -> None:
        self.live = {"whl_good": TENANT}
        self.executors = {"whl_executor"}
        self.lookups = 0

    async def authenticate(self, token: str) -> TenantId | None:
        self.lookups += 1
        return self.live.get(token)

    async def authenticate_executor(self, token: str) -> ExecutorCredential | None:
        self.lookups += 1
        return CREDENTIAL if token in self.executors else None


@pytest.mark.parametrize(
    "metadata",
    [
        (),
        (("x-other", "Bearer whl_good"),),
        (("authorization", "Basic dXNlcjpwYXNz"),),
        (("authorization", "Bearer "),),
        (("authorization", "whl_good"),),
    ],
)
def test_a_call_without_a_bearer_token_is_unauthenticated(
    metadata: tuple[tuple[str, str], ...],
) -> None:
    with pytest.raises(Unauthenticated):
        bearer(metadata)


def test_the_scheme_is_case_insensitive() -> None:
    assert bearer((("authorization", "bearer whl_x"),)) == "whl_x"
    assert bearer((("Authorization", "BEARER  whl_x "),)) == "whl_x"


async def test_a_tenant_is_cached_until_the_ttl_then_revocation_shows() -> None:
    tokens, now = Tokens(), [0.0]
    auth = Authenticator(tokens, ttl_s=5.0, clock=lambda: now[0])
    metadata = (("authorization", "Bearer whl_good"),)
    assert await auth.tenant(metadata) == TENANT
    assert await auth.tenant(metadata) == TENANT
    assert tokens.lookups == 1
    del tokens.live["whl_good"]  # revoked
    now[0] = 4.9
    assert await auth.tenant(metadata) == TENANT, "still within the cache's TTL"
    now[0] = 5.1
    with pytest.raises(Unauthenticated):
        await auth.tenant(metadata)


async def test_unknown_tokens_are_not_cached() -> None:
    tokens = Tokens()
    auth = Authenticator(tokens, ttl_s=5.0, clock=lambda: 0.0)
    metadata = (("authorization", "Bearer whl_new"),)
    with pytest.raises(Unauthenticated):
        await auth.tenant(metadata)
    tokens.live["whl_new"] = TENANT  # created just after the first try
    assert await auth.tenant(metadata) == TENANT


async def test_the_executor_stream_takes_only_executor_tokens() -> None:
    tokens, now = Tokens(), [0.0]
    gate = ExecutorAuthenticator(tokens, ttl_s=5.0, clock=lambda: now[0])
    credential = await gate.check((("authorization", "Bearer whl_executor"),))
    assert credential.allows("pool-a-7d9f")
    assert not credential.allows("pool-b")
    await gate.check((("authorization", "Bearer whl_executor"),))
    assert tokens.lookups == 1, "cached"
    with pytest.raises(PermissionDenied):
        await gate.check((("authorization", "Bearer whl_good"),))  # a tenant's
    with pytest.raises(Unauthenticated):
        await gate.check((("authorization", "Bearer whl_unknown"),))
    tokens.executors.clear()  # revoked
    now[0] = 6.0
    with pytest.raises(Unauthenticated):
        await gate.check((("authorization", "Bearer whl_executor"),))
