"""Bearer tokens to tenants: the only way a call gets a tenant.

A call carries `authorization: Bearer whl_...`. The tenant is looked up by
the token's SHA-256 (`wheel.store.tenants`) and cached for a few seconds, so
a busy client costs one lookup per token per TTL; a revoked token stops
working within that TTL. Unknown tokens are not cached (a client retrying
with a fresh token is not refused for the TTL).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Protocol

from wheel.errors import PermissionDenied, Unauthenticated
from wheel.model.ids import TenantId
from wheel.store.tenants import token_hash

_SCHEME = "bearer "
_MAX_CACHED = 10_000


class TokenLookup(Protocol):
    async def authenticate(self, token: str) -> TenantId | None: ...


class ExecutorTokenLookup(TokenLookup, Protocol):
    async def authenticate_executor(self, token: str) -> bool: ...


class Authenticator:
    def __init__(
        self,
        tokens: TokenLookup,
        *,
        ttl_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tokens = tokens
        self._ttl_s = ttl_s
        self._clock = clock
        self._cache: dict[bytes, tuple[TenantId, float]] = {}

    async def tenant(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> TenantId:
        """The tenant of the call's bearer token; Unauthenticated without a live one."""
        token = bearer(metadata)
        digest = token_hash(token)
        now = self._clock()
        cached = self._cache.get(digest)
        if cached is not None and cached[1] > now:
            return cached[0]
        tenant = await self._tokens.authenticate(token)
        if tenant is None:
            self._cache.pop(digest, None)
            raise Unauthenticated("the token is unknown or revoked")
        if len(self._cache) >= _MAX_CACHED:
            self._cache = {k: v for k, v in self._cache.items() if v[1] > now}
            if len(self._cache) >= _MAX_CACHED:
                self._cache.clear()
        self._cache[digest] = (tenant, now + self._ttl_s)
        return tenant


def bearer(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    """The token of an `authorization: Bearer ...` header; Unauthenticated if there is none."""
    for key, value in metadata or ():
        if key.lower() != "authorization":
            continue
        text = value.decode(errors="replace") if isinstance(value, bytes) else value
        if text[: len(_SCHEME)].lower() != _SCHEME or not text[len(_SCHEME) :].strip():
            raise Unauthenticated("authorization must be 'Bearer <token>'")
        return text[len(_SCHEME) :].strip()
    raise Unauthenticated("no token: send 'authorization: Bearer <token>' (wheel tokens create)")


class ExecutorAuthenticator:
    """Executor tokens for the executor stream, which carries every tenant's payloads.

    A live executor token passes (cached like tenants' tokens); a tenant's token
    is PermissionDenied; anything else Unauthenticated.
    """

    def __init__(
        self,
        tokens: ExecutorTokenLookup,
        *,
        ttl_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tokens = tokens
        self._ttl_s = ttl_s
        self._clock = clock
        self._cache: dict[bytes, float] = {}

    async def check(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> None:
        token = bearer(metadata)
        digest = token_hash(token)
        now = self._clock()
        if self._cache.get(digest, 0.0) > now:
            return
        if await self._tokens.authenticate_executor(token):
            if len(self._cache) >= _MAX_CACHED:
                self._cache.clear()
            self._cache[digest] = now + self._ttl_s
            return
        self._cache.pop(digest, None)
        if await self._tokens.authenticate(token) is not None:
            raise PermissionDenied("a tenant's token cannot open the executor stream")
        raise Unauthenticated("the token is unknown or revoked")
