"""ManualClock's promises to tests, SystemClock's units, and the lateness statistics."""

from __future__ import annotations

import time

import pytest

from wheel.timingwheel import FiredBatch, LatenessStats, ManualClock, SystemClock


def test_manual_clock_runs_alarms_in_order_at_their_times() -> None:
    clock = ManualClock(wall_ms=1_000, monotonic_ms=0)
    seen: list[tuple[str, int, int]] = []

    def note(name: str) -> None:
        seen.append((name, clock.wall_ms(), clock.monotonic_ms()))

    clock.call_later(10, lambda: note("b"))
    clock.call_later(5, lambda: note("a"))
    clock.call_later(7, lambda: note("gone")).cancel()

    def chain() -> None:
        clock.call_soon(lambda: note("soon"))

    clock.call_soon(chain)
    assert clock.pending_alarms() == [0, 5, 10]
    assert clock.advance(20) == 4
    assert seen == [("soon", 1_000, 0), ("a", 1_005, 5), ("b", 1_010, 10)]
    assert (clock.wall_ms(), clock.monotonic_ms()) == (1_020, 20)


def test_manual_clock_steps_the_wall_clock_alone() -> None:
    clock = ManualClock(wall_ms=1_000, monotonic_ms=50)
    clock.step_wall(-300)
    assert (clock.wall_ms(), clock.monotonic_ms()) == (700, 50)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)


def test_system_clock_is_in_milliseconds() -> None:
    clock = SystemClock()
    assert abs(clock.wall_ms() - time.time() * 1000) < 60_000
    first = clock.monotonic_ms()
    assert clock.monotonic_ms() >= first


def test_lateness_stats() -> None:
    stats = LatenessStats()
    assert stats.quantile_ms(0.99) is None
    assert stats.mean_ms() is None
    entries = [(f"k{i}", 1_000) for i in range(98)] + [("x", 997), ("y", 900)]
    batch = FiredBatch(entries, fired_at_ms=1_000)
    assert list(batch.lateness_ms())[-2:] == [3, 100]
    stats.record(batch)
    stats.record(FiredBatch([], fired_at_ms=5))
    assert stats.count == 100
    assert stats.max_ms == 100
    assert stats.mean_ms() == pytest.approx(1.03)
    assert stats.quantile_ms(0.5) == 0
    assert stats.quantile_ms(0.99) == 3
    assert stats.quantile_ms(1.0) == 100
    stats.record(FiredBatch([("late", 0)], fired_at_ms=60_000))
    assert stats.quantile_ms(1.0) == 60_000  # past the last bound: the maximum
