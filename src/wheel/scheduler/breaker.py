"""A circuit breaker per task type: stop feeding a task that keeps failing, probe, resume.

After `threshold` consecutive failures (a failed result or an expired
lease) of one task type the breaker opens: its occurrences are parked (left
pending, unclaimed) instead of dispatched. After the cool-down one
occurrence goes out as a probe; its success closes the breaker and the
parked ones flow again, its failure opens it for another cool-down. A probe
whose result never comes back is given up after `probe_timeout_s`.

Each node keeps its own breakers, from the results it records: a task type
failing on every node opens every node's breaker.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class BreakerState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(slots=True)
class _Breaker:
    state: BreakerState = BreakerState.CLOSED
    failures: int = 0
    until: float = 0.0
    """OPEN: when a probe may go; HALF_OPEN: when the probe is given up."""


class Breakers:
    def __init__(self, *, threshold: int, cooldown_s: float, probe_timeout_s: float) -> None:
        self._threshold = threshold
        self._cooldown_s = cooldown_s
        self._probe_timeout_s = probe_timeout_s
        self._breakers: dict[str, _Breaker] = {}

    def allow(self, task_type: str, now: float) -> bool:
        """May one occurrence of this task type be dispatched now? (A probe counts as one.)"""
        breaker = self._breakers.get(task_type)
        if breaker is None or breaker.state is BreakerState.CLOSED:
            return True
        if now < breaker.until:
            return False
        # Cool-down over (OPEN), or the probe was lost (HALF_OPEN): send a probe.
        breaker.state = BreakerState.HALF_OPEN
        breaker.until = now + self._probe_timeout_s
        return True

    def probe_due(self, task_type: str, now: float) -> bool:
        """Is the breaker open (or its probe lost) and its time to let one through come?"""
        breaker = self._breakers.get(task_type)
        return (
            breaker is not None
            and breaker.state is not BreakerState.CLOSED
            and (now >= breaker.until)
        )

    def record(self, task_type: str, succeeded: bool, now: float) -> None:
        breaker = self._breakers.get(task_type)
        if succeeded:
            if breaker is not None:
                del self._breakers[task_type]
            return
        if breaker is None:
            breaker = self._breakers[task_type] = _Breaker()
        breaker.failures += 1
        if breaker.state is BreakerState.HALF_OPEN or breaker.failures >= self._threshold:
            breaker.state = BreakerState.OPEN
            breaker.until = now + self._cooldown_s

    def not_closed(self) -> dict[str, BreakerState]:
        """Every task type whose breaker is open or probing."""
        return {t: b.state for t, b in self._breakers.items() if b.state is not BreakerState.CLOSED}

    def state(self, task_type: str) -> BreakerState:
        breaker = self._breakers.get(task_type)
        return breaker.state if breaker else BreakerState.CLOSED

    def next_change(self) -> float | None:
        """The earliest instant a breaker lets a probe go (None: none is waiting)."""
        times = [b.until for b in self._breakers.values() if b.state is not BreakerState.CLOSED]
        return min(times, default=None)

    def open_task_types(self) -> list[str]:
        return sorted(self.not_closed())
