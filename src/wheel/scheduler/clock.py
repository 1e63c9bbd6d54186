"""How far this node's clock is from the database's, and whether it may fire.

Instants are agreed between nodes, executors and Postgres (leases run on
the database clock). A node whose clock is off fires everything early or
late by that much, so it measures its offset — the database's
`clock_timestamp()` against the midpoint of the local round trip — and
declares itself unfit while the offset is beyond the configured bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from wheel.store import Store
from wheel.store.translate import translated


@dataclass(frozen=True, slots=True)
class ClockReading:
    offset_ms: float
    """Database clock minus local clock."""
    round_trip_ms: float


async def measure(store: Store, samples: int = 3) -> ClockReading:
    """The reading with the shortest round trip of a few (the least disturbed by delay)."""
    best: ClockReading | None = None
    async with translated(), store.pool.connection() as conn:
        for _ in range(samples):
            sent = time.time()
            cursor = await conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8")
            row = await cursor.fetchone()
            received = time.time()
            assert row is not None
            midpoint = (sent + received) / 2
            reading = ClockReading((float(row[0]) - midpoint) * 1000, (received - sent) * 1000)
            if best is None or reading.round_trip_ms < best.round_trip_ms:
                best = reading
    assert best is not None
    return best
