"""Keeping CPython's cyclic garbage collector from stalling the loop over a big resident set.

The wheel's own per-timer objects (str keys, int deadlines, dict entries) are
not tracked by the cyclic collector, but what an application keeps per timer
(occurrence records, payloads) usually is. With a million of those alive, a
full collection walks all of them: measured here at ~300 ms of p99 lateness.
CPython starts a full collection once objects promoted since the last one
exceed a quarter of those that survived it, so a node that keeps loading
timers runs one every few seconds at high rates.

`gc.freeze()` moves every tracked object into a permanent generation the
collector never walks. It is O(1) (a list splice). The governor freezes once
at start and again after every `freeze_every_added` timers added, so the part
the collector still walks stays small; young collections keep running as
usual and freed objects are still reclaimed by reference counting. The price:
a reference cycle that was alive at a freeze and dies later is not collected
until `collect_frozen()` (a full, slow collection for a quiet moment).
`collect_frozen_if_grown()` runs one only once the frozen generation has grown by
FROZEN_GROWTH since the last: CPython's own rule for full collections, so their
cost stays proportional to what was frozen since. (An executor going idle after
every freeze collected the whole heap each time: 16.5 % of its CPU at 5,000 runs/s.)
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass

from wheel.errors import ConfigError

logger = logging.getLogger(__name__)

FROZEN_GROWTH = 0.25
"""`collect_frozen_if_grown` collects once the frozen generation grew by this fraction."""


@dataclass(frozen=True, slots=True)
class GcPolicy:
    """`GcPolicy(freeze_every_added=10_000)`: freeze after every 10,000 timers added."""

    freeze_every_added: int = 10_000
    """Timers added between two `gc.freeze()` calls."""

    gen0_threshold: int | None = None
    """If set, the young generation's threshold while the governor runs (CPython: 700)."""

    def __post_init__(self) -> None:
        if self.freeze_every_added < 1:
            raise ConfigError("freeze_every_added", f"must be >= 1, got {self.freeze_every_added}")
        if self.gen0_threshold is not None and self.gen0_threshold < 1:
            raise ConfigError("gen0_threshold", f"must be >= 1, got {self.gen0_threshold}")


class GcGovernor:
    """Applies a `GcPolicy` to this process; one per process (the collector is global)."""

    def __init__(self, policy: GcPolicy) -> None:
        self.policy = policy
        self.freezes = 0
        self._added = 0
        self._saved_thresholds: tuple[int, int, int] | None = None
        self._frozen_after_collect = 0

    def start(self) -> None:
        """Freeze what is alive now (imports, configuration, loaded timers)."""
        if self._saved_thresholds is not None:
            return
        self._saved_thresholds = gc.get_threshold()
        if self.policy.gen0_threshold is not None:
            _, gen1, gen2 = self._saved_thresholds
            gc.set_threshold(self.policy.gen0_threshold, gen1, gen2)
        self.freeze()
        self._frozen_after_collect = gc.get_freeze_count()

    def note_added(self, count: int) -> bool:
        """Count timers added; freezes (and returns True) once enough have been."""
        self._added += count
        if self._saved_thresholds is None or self._added < self.policy.freeze_every_added:
            return False
        self.freeze()
        return True

    def freeze(self) -> None:
        # No collection first: even a young one costs milliseconds at high rates, and
        # only cyclic garbage (rare here) would be worth it; the rest goes by refcount.
        gc.freeze()
        self._added = 0
        self.freezes += 1

    def collect_frozen(self) -> int:
        """Unfreeze, run a full collection, freeze again; slow, for a quiet moment."""
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        self._frozen_after_collect = gc.get_freeze_count()
        logger.info("timingwheel.gc_collect_frozen", extra={"collected": found})
        return found

    def frozen_grown(self) -> bool:
        """Whether the frozen generation grew by FROZEN_GROWTH since the last collection
        of it (or the start)."""
        return gc.get_freeze_count() > self._frozen_after_collect * (1 + FROZEN_GROWTH)

    def collect_frozen_if_grown(self) -> int | None:
        """`collect_frozen()` if the frozen generation has grown enough to be worth it;
        None when it has not."""
        return self.collect_frozen() if self.frozen_grown() else None

    def stop(self) -> None:
        """Restore the collector's thresholds; frozen objects stay frozen (unfreezing
        would hand them all to the next full collection at once)."""
        if self._saved_thresholds is not None:
            gc.set_threshold(*self._saved_thresholds)
            self._saved_thresholds = None
