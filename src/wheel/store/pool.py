"""The connection pool every store operation borrows from."""

from __future__ import annotations

from typing import TypeAlias

from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from wheel.store.translate import translated

Pool: TypeAlias = AsyncConnectionPool[AsyncConnection[TupleRow]]


async def open_pool(
    dsn: str, *, min_size: int = 2, max_size: int = 10, timeout_s: float = 30
) -> Pool:
    """Open a pool and wait until its first connections are up (StoreUnavailable if not).

    `timeout_s` bounds that wait and, later, every wait for a free connection.
    """
    pool: Pool = AsyncConnectionPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        open=False,
        name="wheel",
        timeout=timeout_s,
        # Autocommit: each store operation is one statement or opens its own transaction.
        kwargs={"autocommit": True},
    )
    async with translated():
        await pool.open(wait=True, timeout=timeout_s)
    return pool
