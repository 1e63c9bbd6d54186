"""psycopg's errors become wheel's, once, at the store's edge."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg
import psycopg_pool

from wheel.errors import StoreError, StoreUnavailable

# SQLSTATE classes that mean "not now" rather than "never": connection
# exceptions, insufficient resources, operator intervention (shutdown).
_TRANSIENT_CLASSES = ("08", "53", "57")


def translate(exc: psycopg.Error | psycopg_pool.PoolTimeout) -> StoreError:
    """The most specific wheel error for a psycopg error."""
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return StoreUnavailable(f"no database connection available: {exc}")
    if isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None:
        return StoreUnavailable(f"cannot reach Postgres: {exc}")
    sqlstate = exc.sqlstate or ""
    if sqlstate[:2] in _TRANSIENT_CLASSES:
        return StoreUnavailable(f"Postgres unavailable ({sqlstate}): {exc}")
    return StoreError(f"Postgres error ({sqlstate or 'no sqlstate'}): {exc}")


@asynccontextmanager
async def translated() -> AsyncIterator[None]:
    """Raise wheel's errors in place of psycopg's inside the block."""
    try:
        yield
    except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
        raise translate(exc) from exc
