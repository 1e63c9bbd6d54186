"""Waiting on the database's own state where it offers no event to await."""

from __future__ import annotations

import asyncio

import psycopg


async def blocked_on_a_lock(dsn: str) -> None:
    """Return once a session of this database waits on a lock."""
    # Autocommit: inside a transaction pg_stat_activity is a snapshot that never changes.
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as observer:
        while True:
            cursor = await observer.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            row = await cursor.fetchone()
            if row is not None and row[0] > 0:
                return
            await asyncio.sleep(0.005)  # Postgres offers no way to await a waiter
