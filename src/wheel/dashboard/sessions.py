"""Signed-in browsers: a random session id in an HttpOnly, SameSite=Lax cookie, the tenant
token and a CSRF token kept here, in memory, never in a URL, a page or a log.

A node restart signs everyone out (sessions are memory only), which is the safe way
round for a credential. Sessions idle past `idle_s` end; one token holds at most
`per_token` of them (its oldest go first), so one tenant signing in again and again
cannot push everyone else's out; at most `limit` are kept in all.
"""

from __future__ import annotations

import hashlib
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
    owner: bytes = field(repr=False)
    """The token's SHA-256: which sessions one token holds (never the token itself)."""
    last_seen: float

    def csrf_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given, self.csrf)


class Sessions:
    def __init__(
        self, *, idle_s: float = 12 * 3600, limit: int = 10_000, per_token: int = 5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self._by_id: dict[str, Session] = {}
        self._idle_s = idle_s
        self._limit = limit
        self._per_token = per_token
        self._clock = clock

    async def open(self, client: AsyncClient, token: str) -> Session:
        await self._expire()
        owner = hashlib.sha256(token.encode()).digest()
        own = sorted((s for s in self._by_id.values() if s.owner == owner),
                     key=lambda s: s.last_seen)  # fmt: skip
        for session in own[: max(0, len(own) - self._per_token + 1)]:
            await self.close(session.id)
        while len(self._by_id) >= self._limit:
            oldest = min(self._by_id.values(), key=lambda s: s.last_seen)
            await self.close(oldest.id)
        session = Session(
            secrets.token_urlsafe(32), client, secrets.token_urlsafe(32), owner, self._clock()
        )
        self._by_id[session.id] = session
        return session

    def get(self, session_id: str | None, *, touch: bool = True) -> Session | None:
        """The live session; `touch` False for background refreshes, which must not keep an
        unattended browser signed in."""
        session = self._by_id.get(session_id or "")
        if session is None:
            return None
        now = self._clock()
        if now - session.last_seen > self._idle_s:
            return None
        if touch:
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
