"""The loader on the engine's manual clock: what each window tick, catch-up pass and
notification reads, and when the node's loop ticks it, with no waiting.

The engine is the real one (on a `ManualClock`, owning `PARTITION`); the loader's store
is an in-memory stand-in that answers its reads from a list of pending runs and keeps
what it was asked.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import cast

from tests.unit.scheduler.helpers import PARTITION, Bench, bench, due_runs
from wheel.errors import StoreUnavailable
from wheel.model.executions import DueOccurrence
from wheel.model.ids import PartitionId
from wheel.scheduler.loader import Loader
from wheel.scheduler.periodic import every
from wheel.store import Store
from wheel.store.notifications import Notification
from wheel.store.occurrences import DueCursor

WINDOW_S = 300
PREFETCH_MS = 500
SLACK = timedelta(seconds=30)


@dataclass
class _Pending:
    """The store's pending runs, as the loader's reads see them."""

    runs: list[DueOccurrence] = field(default_factory=list)
    loads: list[tuple[datetime | None, datetime]] = field(default_factory=list)
    """(after, before) of each `load_due`."""
    requeued: list[tuple[datetime, datetime]] = field(default_factory=list)
    """(since, before) of each `load_requeued`."""
    misfires: list[dict[PartitionId, int]] = field(default_factory=list)
    away: bool = False

    async def load_due(
        self, partitions: Collection[PartitionId], before: datetime, *,
        after: DueCursor | None, limit: int, created_after: datetime | None = None,
    ) -> list[DueOccurrence]:  # fmt: skip
        if self.away:
            raise StoreUnavailable("the database is away (the test's)")
        start = after.fire_at if after is not None else None
        self.loads.append((start, before))
        return [
            run for run in self.runs
            if run.partition in partitions and run.fire_at < before
            and (start is None or run.fire_at > start)
        ][:limit]  # fmt: skip

    async def load_requeued(
        self, partitions: list[PartitionId], since: datetime, before: datetime
    ) -> list[DueOccurrence]:
        self.requeued.append((since, before))
        return []

    async def apply_misfire(self, epochs: dict[PartitionId, int]) -> int:
        self.misfires.append(epochs)
        return 0


def _loader() -> tuple[Bench, Loader, _Pending]:
    b = bench(window_s=WINDOW_S, prefetch_ms=PREFETCH_MS)
    pending = _Pending()
    store = cast(Store, type("PendingStore", (), {"occurrences": pending})())
    return b, Loader(b.engine, store, dsn="postgresql://unused"), pending


def _run_at(b: Bench, seconds: float) -> DueOccurrence:
    (run,) = due_runs(uuid.uuid4(), 1, fire_at=b.now() + timedelta(seconds=seconds))
    return run


async def test_each_tick_loads_only_the_slice_the_clock_moved_the_window_on() -> None:
    b, loader, pending = _loader()
    t0 = b.now()
    window = timedelta(seconds=WINDOW_S)
    inside, next_second, later = (_run_at(b, s) for s in (WINDOW_S - 1, WINDOW_S + 0.5, 302))
    pending.runs = [inside, next_second, later]
    assert await loader.tick() == 1
    assert loader.loaded_until == t0 + window
    b.clock.advance(1000)
    assert await loader.tick() == 1, "the second that came into the window"
    assert loader.loaded_until == t0 + window + timedelta(seconds=1)
    assert pending.loads == [(None, t0 + window), (t0 + window, t0 + window + timedelta(seconds=1))]
    assert set(b.engine.known) == {inside.key, next_second.key}
    b.clock.advance(2000)
    assert await loader.tick() == 1
    assert later.key in b.engine.known


async def test_catch_up_reads_what_is_claimable_and_the_whole_window_every_slack_period() -> None:
    b, loader, pending = _loader()
    t0 = b.now()
    await loader.tick()
    window_end = loader.loaded_until
    assert window_end is not None
    prefetch = timedelta(milliseconds=PREFETCH_MS)
    passes = []
    for _ in range(7):  # a pass every 5 s, as the node's catch-up loop runs them
        passes.append(b.now())
        await loader.catch_up()
        b.clock.advance(5000)
    befores = [before for _, before in pending.requeued]
    assert befores[:6] == [at + prefetch for at in passes[:6]], "near passes: claimable now"
    assert befores[6] == window_end, "30 s after the last full pass: the loaded window"
    sinces = [since for since, _ in pending.requeued]
    assert sinces[0] == t0 - SLACK
    assert sinces[1:6] == [at - SLACK for at in passes[:5]], "the slack before the last pass"
    assert sinces[6] == t0 - SLACK, "a full pass reads from before the last full one"
    await loader.catch_up()
    assert pending.requeued[-1][1] == b.now() + prefetch, "the next full one is 30 s on"


async def test_a_notified_past_instant_applies_the_misfire_rule_first_and_a_near_one_not() -> None:
    b, loader, pending = _loader()
    await loader.tick()
    now = b.now()
    run = _run_at(b, -0.5)
    pending.runs = [run]
    assert await loader.notified(Notification({PARTITION: run.fire_at}, None)) == 1
    assert pending.misfires == [], "half a second late: loaded as it is"
    late = _run_at(b, -1.5)
    pending.runs = [late]
    await loader.notified(Notification({PARTITION: late.fire_at}, None))
    assert pending.misfires == [{PARTITION: 1}], "a second and a half late: the rule first"
    beyond = now + timedelta(seconds=WINDOW_S + 1)
    loads = len(pending.loads)
    assert await loader.notified(Notification({PARTITION: beyond}, None)) == 0
    assert len(pending.loads) == loads, "past the loaded window: the window will reach it"


async def test_the_nodes_loop_tops_the_window_up_every_interval_and_retries_sooner() -> None:
    b, loader, pending = _loader()
    t0 = b.now()
    ticking = every("window", 1.0, loader.tick, alarm=b.clock, rand=lambda: 0.5)
    try:
        await _turns()
        assert len(pending.loads) == 1, "at once"
        b.clock.advance(999)
        await _turns()
        assert len(pending.loads) == 1, "not before its interval"
        b.clock.advance(1)
        await _turns()
        assert loader.loaded_until == t0 + timedelta(seconds=WINDOW_S + 1)
        pending.away = True
        b.clock.advance(1000)
        await _turns()
        tried_at = [b.clock.monotonic_ms()]
        for _ in range(4):
            (due,) = b.clock.pending_alarms()
            b.clock.advance(due - b.clock.monotonic_ms())
            await _turns()
            tried_at.append(b.clock.monotonic_ms())
        waits = [later - sooner for sooner, later in itertools.pairwise(tried_at)]
        assert waits == [200, 400, 800, 1000], "retried sooner: doubling, at most the interval"
        pending.away = False
        (due,) = b.clock.pending_alarms()
        b.clock.advance(due - b.clock.monotonic_ms())
        await _turns()
        assert loader.loaded_until == b.now() + timedelta(seconds=WINDOW_S)
    finally:
        ticking.cancel()


async def _turns() -> None:
    """Let the loop run what is ready (the clock is manual: no time passes)."""
    for _ in range(50):
        await asyncio.sleep(0)
