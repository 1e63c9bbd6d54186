"""What the driver hands out and counts: fired batches, their lateness, its own events."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

LATENESS_BOUNDS_MS = (0, 1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000)
"""Upper bounds (inclusive) of the lateness histogram's buckets; the last bucket is open."""


@dataclass(frozen=True, slots=True)
class FiredBatch(Generic[K]):
    """Timers released together: (key, deadline_ms) pairs, earliest first.

    `fired_at_ms` is the wall clock when they were released, so each timer's
    lateness is `fired_at_ms - deadline_ms` (never negative).
    """

    entries: list[tuple[K, int]]
    fired_at_ms: int

    def __len__(self) -> int:
        return len(self.entries)

    def lateness_ms(self) -> Iterator[int]:
        """Lateness of each entry, in the order of `entries`."""
        fired_at_ms = self.fired_at_ms
        return (fired_at_ms - deadline_ms for _, deadline_ms in self.entries)


class LatenessStats:
    """Count, sum, maximum and a fixed histogram of lateness in milliseconds.

    Cheap enough to update for every fired timer; quantiles are read from the
    histogram as the upper bound of the bucket they fall in.
    """

    __slots__ = ("count", "histogram", "max_ms", "sum_ms")

    def __init__(self) -> None:
        self.count = 0
        self.sum_ms = 0
        self.max_ms = 0
        self.histogram = [0] * (len(LATENESS_BOUNDS_MS) + 1)

    def record(self, batch: FiredBatch[K]) -> None:
        if not batch.entries:
            return
        fired_at_ms, histogram = batch.fired_at_ms, self.histogram
        # Entries come earliest first, so runs of one deadline are the rule.
        previous_ms, slot, total_ms, earliest_ms = -1, 0, 0, fired_at_ms
        for _, deadline_ms in batch.entries:
            if deadline_ms != previous_ms:
                previous_ms = deadline_ms
                slot = bisect_left(LATENESS_BOUNDS_MS, fired_at_ms - deadline_ms)
                earliest_ms = min(earliest_ms, deadline_ms)
            histogram[slot] += 1
            total_ms += deadline_ms
        count = len(batch.entries)
        self.count += count
        self.sum_ms += fired_at_ms * count - total_ms
        self.max_ms = max(self.max_ms, fired_at_ms - earliest_ms)

    def quantile_ms(self, q: float) -> int | None:
        """An upper bound on the q-quantile (0 < q <= 1); None before anything fired.

        Past the last bound it answers the maximum seen.
        """
        if not self.count:
            return None
        rank = q * self.count
        seen = 0
        for slot, n in enumerate(self.histogram):
            seen += n
            if seen >= rank and n:
                if slot < len(LATENESS_BOUNDS_MS):
                    return min(LATENESS_BOUNDS_MS[slot], self.max_ms)
                return self.max_ms
        return self.max_ms

    def mean_ms(self) -> float | None:
        return self.sum_ms / self.count if self.count else None


@dataclass(slots=True)
class DriverStats:
    """Counters of a `WheelDriver`, read at will (e.g. by a metrics exporter)."""

    wakeups: int = 0
    """Times the driver ran a step."""
    idle_wakeups: int = 0
    """Steps that found nothing to release or promote (an early alarm, a cancelled timer)."""
    batches: int = 0
    fired: int = 0
    throttled: int = 0
    """Steps that released fewer timers than were due because the backlog rate ran out."""
    clock_jumps_forward: int = 0
    clock_jumps_backward: int = 0
    last_clock_jump_ms: int = 0
    """Size of the last wall-clock jump seen (signed), in ms."""
    gc_freezes: int = 0
    lateness: LatenessStats = field(default_factory=LatenessStats)
