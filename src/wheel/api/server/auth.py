"""Bearer tokens to tenants: the only way a call gets a tenant.

A call carries `authorization: Bearer whl_...`. The tenant is looked up by
the token's SHA-256 (`wheel.store.tenants`) and cached for a few seconds, so
a busy client costs one lookup per token per TTL; a revoked token stops
working within that TTL. Unknown tokens are not cached (a client retrying
with a fresh token is not refused for the TTL).

Inside a call, `caller_token()` is the calling token's hash: what a handler
that records who acted (a retry's "retried by <token name>") looks the name up by.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Generic, Protocol, TypeVar

from wheel.errors import PermissionDenied, Unauthenticated
from wheel.model.ids import TenantId
from wheel.model.tenants import ExecutorCredential
from wheel.store.tenants import token_hash

_SCHEME = "bearer "
_MAX_CACHED = 10_000
V = TypeVar("V")
_CALLER: ContextVar[bytes | None] = ContextVar("wheel_api_caller_token", default=None)


def caller_token() -> bytes | None:
    """The SHA-256 of the token the current call was authenticated with; None outside a
    call (each call runs in its own task, so one call never sees another's)."""
    return _CALLER.get()


class TokenLookup(Protocol):
    async def authenticate(self, token: str) -> TenantId | None: ...


class ExecutorTokenLookup(TokenLookup, Protocol):
    async def authenticate_executor(self, token: str) -> ExecutorCredential | None: ...


class _Cache(Generic[V]):
    """Values by token hash for `ttl_s`; bounded (cleared when full: a miss costs a lookup)."""

    def __init__(self, ttl_s: float, clock: Callable[[], float]) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._entries: dict[bytes, tuple[V, float]] = {}

    def get(self, digest: bytes) -> V | None:
        entry = self._entries.get(digest)
        return entry[0] if entry is not None and entry[1] > self._clock() else None

    def put(self, digest: bytes, value: V) -> None:
        now = self._clock()
        if len(self._entries) >= _MAX_CACHED:
            self._entries = {k: v for k, v in self._entries.items() if v[1] > now}
            if len(self._entries) >= _MAX_CACHED:
                self._entries.clear()
        self._entries[digest] = (value, now + self._ttl_s)

    def drop(self, digest: bytes) -> None:
        self._entries.pop(digest, None)


class Authenticator:
    """Tenants' tokens for the public API."""

    def __init__(
        self,
        tokens: TokenLookup,
        *,
        ttl_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tokens = tokens
        self._cache: _Cache[TenantId] = _Cache(ttl_s, clock)

    async def tenant(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> TenantId:
        """The tenant of the call's bearer token; Unauthenticated without a live one."""
        token = bearer(metadata)
        digest = token_hash(token)
        cached = self._cache.get(digest)
        if cached is not None:
            _CALLER.set(digest)
            return cached
        tenant = await self._tokens.authenticate(token)
        if tenant is None:
            self._cache.drop(digest)
            raise Unauthenticated("the token is unknown or revoked")
        self._cache.put(digest, tenant)
        _CALLER.set(digest)
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

    A live executor token passes, with what it allows (cached like tenants'
    tokens, so a revoked one stops passing within `ttl_s`); a tenant's token is
    PermissionDenied; anything else Unauthenticated.
    """

    def __init__(
        self,
        tokens: ExecutorTokenLookup,
        *,
        ttl_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tokens = tokens
        self.ttl_s = ttl_s
        self._cache: _Cache[ExecutorCredential] = _Cache(ttl_s, clock)

    async def check(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> ExecutorCredential:
        token = bearer(metadata)
        digest = token_hash(token)
        cached = self._cache.get(digest)
        if cached is not None:
            return cached
        credential = await self._tokens.authenticate_executor(token)
        if credential is not None:
            self._cache.put(digest, credential)
            return credential
        self._cache.drop(digest)
        if await self._tokens.authenticate(token) is not None:
            raise PermissionDenied("a tenant's token cannot open the executor stream")
        raise Unauthenticated("the token is unknown or revoked")
