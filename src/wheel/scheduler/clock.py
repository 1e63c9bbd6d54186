"""How far this node's clock is from the database's, and whether it may fire.

Instants are agreed between nodes, executors and Postgres (leases run on
the database clock). A node whose clock is off fires everything early or
late by that much, so it measures its offset — the database's
`clock_timestamp()` against the midpoint of the local round trip — and
declares itself unfit while the offset is beyond the configured bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from wheel.store import Store


@dataclass(frozen=True, slots=True)
class ClockReading:
    offset_ms: float
    """Database clock minus local clock."""
    round_trip_ms: float


async def measure(
    store: Store, samples: int = 3, *, local: Callable[[], float] = time.time
) -> ClockReading:
    """The reading with the shortest round trip of a few (the least disturbed by delay)."""
    taken = await store.clock.samples(samples, local=local)
    best = min(taken, key=lambda sample: sample.received_s - sample.sent_s)
    midpoint = (best.sent_s + best.received_s) / 2
    return ClockReading((best.database_s - midpoint) * 1000, (best.received_s - best.sent_s) * 1000)
