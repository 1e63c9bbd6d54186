"""What the engine tells the rest of the node: counts it keeps, events as they happen, and a
snapshot of its state.

`EngineStats` are plain counters (logged by the node every few seconds).
`EngineObserver` receives events where they happen; metrics implement it, and
the engine's default does nothing, so the engine never imports metrics.
`EngineSnapshot` is read at scrape and publish time, so nothing is kept twice.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Protocol

from wheel.model.executions import ExecutionStatus, Outcome

UPCOMING_WINDOWS_MS = (("1m", 60_000), ("5m", 300_000))
"""The windows `Engine.upcoming` counts loaded occurrences in (a pre-scaling signal)."""


@dataclass(slots=True)
class EngineStats:
    loaded: int = 0
    claimed: int = 0
    dispatched: int = 0
    recorded: int = 0
    stale: int = 0
    reaped: int = 0
    skipped_overlap: int = 0
    skipped_misfire: int = 0
    """Runs the claim skipped: they waited past their job's misfire grace."""
    not_started: int = 0
    claim_batches: int = 0
    record_batches: int = 0
    claim_s: float = 0.0
    """Time spent in claim statements (wall, summed over concurrent ones)."""
    record_s: float = 0.0
    """Time spent in record statements (wall, summed)."""
    refused: dict[str, int] = field(default_factory=dict)
    """Reports refused, by kind and reason: `result.not_yours`, `result.stale`,
    `heartbeat.refused` (a plain dict: `dataclasses.asdict` mangles a Counter)."""

    def count_refused(self, what: str, count: int = 1) -> None:
        self.refused[what] = self.refused.get(what, 0) + count


class EngineObserver(Protocol):
    """Events of the engine, as they happen (durations in seconds)."""

    def claimed(self, seconds: float, size: int) -> None: ...

    def recorded(self, seconds: float, size: int) -> None: ...

    def dispatched(self, lateness_s: float) -> None: ...

    def refused(self, kind: str, reason: str, count: int) -> None: ...

    def attempt_recorded(self, outcome: Outcome) -> None: ...

    def execution_finished(self, status: ExecutionStatus) -> None: ...

    def skipped(self, reason: str, count: int) -> None:
        """Runs recorded skipped: 'overlap' (the job's policy), 'misfire' (missed past its
        grace) or 'superseded' (made from a definition since edited)."""


class NoObserver:
    """The default observer: every event is dropped."""

    def claimed(self, seconds: float, size: int) -> None:
        pass

    def recorded(self, seconds: float, size: int) -> None:
        pass

    def dispatched(self, lateness_s: float) -> None:
        pass

    def refused(self, kind: str, reason: str, count: int) -> None:
        pass

    def attempt_recorded(self, outcome: Outcome) -> None:
        pass

    def execution_finished(self, status: ExecutionStatus) -> None:
        pass

    def skipped(self, reason: str, count: int) -> None:
        pass


@dataclass(frozen=True, slots=True)
class EngineSnapshot:
    """The engine's state at one moment, for metrics, logs and what the node publishes."""

    at_ms: int
    """When it was taken (wall clock, epoch milliseconds)."""
    timers: int
    """Occurrences in the timing wheel."""
    owned: int
    in_flight: int
    links: int
    ready: dict[str, int]
    """Fired and waiting for executor credit, by pool."""
    credit: dict[str, int]
    """Dispatches the connected executors allow, by pool (every pool served or waiting),
    the credit of executors held back included."""
    held_back: int
    """Executors held back: a lease lapsed while they were silent; probed until they answer."""
    unserved: dict[str, int]
    """Due runs no connected executor serves, by task type."""
    breakers: dict[str, tuple[str, int]]
    """Task types whose breaker is not closed: its state and how many runs are parked."""
    oldest_ready_ms: int | None
    """The wall-clock instant of the oldest fired, unclaimed occurrence."""
    oldest_ready_by_pool: dict[str, int]
    """The same, by pool (pools with runs ready only)."""
    stalled: str | None
    """Why dispatch is stalled (`Engine.stalled`), or None."""
    pressure: dict[str, object]
    """What holds claims back: see `Engine.pressure`."""


def log_fields(stats: EngineStats, snapshot: EngineSnapshot) -> dict[str, object]:
    """The node's periodic stats line: the counters so far and the state now."""
    return {
        **dataclasses.asdict(stats),
        "owned": snapshot.owned,
        "wheel": snapshot.timers,
        "ready": sum(snapshot.ready.values()),
        "in_flight": snapshot.in_flight,
        "links": snapshot.links,
        **snapshot.pressure,
    }
