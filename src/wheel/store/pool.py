"""The connection pool every store operation borrows from, and how it comes back after an
outage.

psycopg_pool retries a connection that failed with a doubling backoff: 1, 3,
7, 15, 31 and 63 s after the first failure. After a 30 s outage (a failover)
work would resume up to 30 s after Postgres did. So each try here gives up
after RECONNECT_TIMEOUT_S, and when one gives up the pool is asked again
RETRY_S later (`AsyncConnectionPool.check`, which grows a pool short of
connections): while Postgres is away a pool tries about every
RECONNECT_TIMEOUT_S, and is back within that of Postgres accepting
connections. Callers meanwhile wait for a connection (up to the pool's
timeout) and are handed the first one made.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TypeAlias

from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from wheel.store.adapters import ADAPTERS
from wheel.store.translate import translated

Pool: TypeAlias = AsyncConnectionPool[AsyncConnection[TupleRow]]

log = logging.getLogger(__name__)

RECONNECT_TIMEOUT_S = 0.5
"""A connection that cannot be made is tried again for this long, then given up."""
RETRY_S = 0.1
"""After a connection was given up, the pool tries again this much later."""


class _Reconnection:
    """Keeps a pool trying to connect while Postgres is away, and says when it is back."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._down_since: float | None = None
        self._checks: set[asyncio.Task[None]] = set()

    async def failed(self, pool: Pool) -> None:
        """psycopg_pool gave a connection up (`reconnect_failed`): try again soon."""
        if self._down_since is None:
            self._down_since = time.monotonic()
            log.warning(
                "store.unreachable",
                extra={"pool": self._name, "retry_s": RECONNECT_TIMEOUT_S + RETRY_S},
            )
        asyncio.get_running_loop().call_later(RETRY_S, self._check, pool)

    def _check(self, pool: Pool) -> None:
        if pool.closed:
            return
        task = asyncio.ensure_future(pool.check())  # grows a pool short of connections
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def connected(self, conn: AsyncConnection[TupleRow]) -> None:
        """psycopg_pool made a connection (`configure`): the outage, if any, is over."""
        await use_utc(conn)
        if self._down_since is not None:
            down_s = time.monotonic() - self._down_since
            self._down_since = None
            log.info("store.reconnected", extra={"pool": self._name, "down_s": round(down_s, 3)})


async def use_utc(conn: AsyncConnection[TupleRow]) -> None:
    """The session's time zone is UTC, whatever the server's default: wheel's instants
    are UTC, and psycopg then reads timestamptz with `datetime.UTC` itself rather than a
    ZoneInfo (`Etc/UTC`, a server default), which every key had to convert (an
    ExecutionKey took 5.1 µs to build from such a row, 2.4 µs from UTC)."""
    await conn.execute("SET TimeZone TO 'UTC'")


async def open_pool(
    dsn: str, *, min_size: int = 2, max_size: int = 10, timeout_s: float = 30, name: str = "wheel"
) -> Pool:
    """Open a pool and wait until its first connections are up (StoreUnavailable if not).

    `timeout_s` bounds that wait and, later, every wait for a free connection.
    """
    reconnection = _Reconnection(name)
    pool: Pool = AsyncConnectionPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        open=False,
        name=name,
        timeout=timeout_s,
        # Autocommit: each store operation is one statement or opens its own transaction.
        kwargs={"autocommit": True, "context": ADAPTERS},
        configure=reconnection.connected,
        reconnect_timeout=RECONNECT_TIMEOUT_S,
        reconnect_failed=reconnection.failed,
    )
    async with translated():
        await pool.open(wait=True, timeout=timeout_s)
    return pool
