"""The pool comes back as soon as Postgres does, however long it was away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.services import CrashablePostgres, until_answered
from wheel.store.pool import RECONNECT_TIMEOUT_S, RETRY_S, open_pool

OUTAGE_S = 8.0
"""psycopg_pool on its own would try again 1, 3, 7 and 15 s after the first failure: back
about 6 s after Postgres."""
BOUND_S = 2.0
"""RECONNECT_TIMEOUT_S + RETRY_S (0.6 s) and a connection, with room for a loaded machine."""


@pytest.fixture
async def postgres() -> AsyncIterator[CrashablePostgres]:
    server = await CrashablePostgres.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.mark.timeout(120)
async def test_a_pool_is_back_within_a_second_of_postgres_whatever_the_outage(
    postgres: CrashablePostgres,
) -> None:
    assert RECONNECT_TIMEOUT_S + RETRY_S < BOUND_S
    pool = await open_pool(postgres.dsn, min_size=1, max_size=1, timeout_s=60)
    try:
        for outage_s in (2.0, OUTAGE_S):
            await postgres.crash()
            asking = asyncio.create_task(until_answered(pool))
            await asyncio.sleep(outage_s)  # the outage
            await postgres.restart()
            back_at = asyncio.get_running_loop().time()
            took_s = await asyncio.wait_for(asking, 60) - back_at
            print(f"after {outage_s:.0f} s away: answered {took_s:.2f} s after Postgres was back")
            assert took_s <= BOUND_S
    finally:
        await pool.close()
