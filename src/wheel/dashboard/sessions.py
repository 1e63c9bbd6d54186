"""Signed-in browsers: a random session id in an HttpOnly, SameSite=Strict cookie, the tenant
token and a CSRF token kept here, in memory, never in a URL, a page or a log.

A node restart signs everyone out (sessions are memory only), which is the safe way
round for a credential. Sessions idle past `idle_s` end; at most `limit` are kept,
the longest idle going first.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from wheel.client.aio import AsyncClient


@dataclass
class Session:
    id: str
    client: AsyncClient = field(repr=False)
    csrf: str = field(repr=False)
    tenant_hint: str
    """What the header shows: the first characters of the token's id part, no secret."""
    last_seen: float

    def csrf_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given, self.csrf)


class Sessions:
    def __init__(
        self, *, idle_s: float = 12 * 3600, limit: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self._by_id: dict[str, Session] = {}
        self._idle_s = idle_s
        self._limit = limit
        self._clock = clock

    async def open(self, client: AsyncClient, tenant_hint: str) -> Session:
        await self._expire()
        while len(self._by_id) >= self._limit:
            oldest = min(self._by_id.values(), key=lambda s: s.last_seen)
            await self.close(oldest.id)
        session = Session(
            secrets.token_urlsafe(32), client, secrets.token_urlsafe(32), tenant_hint,
            self._clock(),
        )  # fmt: skip
        self._by_id[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        session = self._by_id.get(session_id or "")
        if session is None:
            return None
        now = self._clock()
        if now - session.last_seen > self._idle_s:
            return None
        session.last_seen = now
        return session

    async def close(self, session_id: str) -> None:
        session = self._by_id.pop(session_id, None)
        if session is not None:
            await session.client.close()

    async def close_all(self) -> None:
        for session_id in list(self._by_id):
            await self.close(session_id)

    async def _expire(self) -> None:
        now = self._clock()
        for session in [s for s in self._by_id.values() if now - s.last_seen > self._idle_s]:
            await self.close(session.id)
