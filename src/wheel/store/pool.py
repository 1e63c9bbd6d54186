"""The connection pool every store operation borrows from."""

from __future__ import annotations

from typing import TypeAlias

from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from wheel.store.translate import translated

Pool: TypeAlias = AsyncConnectionPool[AsyncConnection[TupleRow]]


async def open_pool(dsn: str, *, min_size: int = 2, max_size: int = 10) -> Pool:
    """Open a pool and wait until its first connections are up (StoreUnavailable if not)."""
    pool: Pool = AsyncConnectionPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        open=False,
        name="wheel",
        # Autocommit: each store operation is one statement or opens its own transaction.
        kwargs={"autocommit": True},
    )
    async with translated():
        await pool.open(wait=True, timeout=30)
    return pool
