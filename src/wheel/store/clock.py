"""The database's clock, read beside the local one: what clock-offset checks measure.

Leases and instants run on Postgres's `clock_timestamp()`, so a node compares its own
clock with it. Each sample brackets one query between two local readings on the same
connection; what to make of the samples (best round trip, midpoint) is the caller's.

    samples = await store.clock.samples(3, local=time.time)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from wheel.errors import StoreError
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.translate import translated


@dataclass(frozen=True, slots=True)
class ClockSample:
    """One reading of the database clock between two of the local clock (epoch seconds)."""

    sent_s: float
    database_s: float
    received_s: float


class DatabaseClock:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def samples(self, count: int, *, local: Callable[[], float]) -> list[ClockSample]:
        """`count` back-to-back readings on one connection, `local` read around each."""
        readings: list[ClockSample] = []
        async with translated(), self._pool.connection() as conn:
            for _ in range(count):
                sent = local()
                cursor = await conn.execute(sql("clock_timestamp"))
                row = await cursor.fetchone()
                received = local()
                if row is None:
                    raise StoreError("clock_timestamp() returned no row")
                readings.append(ClockSample(sent, float(row[0]), received))
        return readings
