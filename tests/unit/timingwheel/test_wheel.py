"""TimingWheel: the API's promises, one at a time, on default and tiny configurations."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

import pytest

from wheel.errors import ConfigError
from wheel.timingwheel import TimingWheel, WheelConfig

START_MS = 1_700_000_000_000
TINY = WheelConfig(tick_ms=1, slots_per_level=(2, 3, 2))
K = TypeVar("K", bound=Hashable)


def drain(wheel: TimingWheel[K], now_ms: int, **limits: int) -> list[tuple[K, int]]:
    """Advance to `now_ms` until the wheel has no more work at that time."""
    fired: list[tuple[K, int]] = []
    while True:
        fired.extend(wheel.advance(now_ms, **limits))
        next_ms = wheel.next_work_ms()
        if next_ms is None or next_ms > now_ms:
            return fired


def test_a_timer_fires_at_its_instant_and_not_before() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS)
    assert wheel.add("a", START_MS + 5_000) is True
    assert drain(wheel, START_MS + 4_999) == []
    assert drain(wheel, START_MS + 5_000) == [("a", START_MS + 5_000)]
    assert len(wheel) == 0
    assert "a" not in wheel


def test_an_insert_already_due_is_reported_and_fires_on_the_next_advance() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS)
    drain(wheel, START_MS + 100)
    assert wheel.add("late", START_MS + 50) is False
    assert wheel.add("now", START_MS + 100) is False
    assert wheel.next_work_ms() is not None
    assert sorted(wheel.advance(START_MS + 100)) == [
        ("late", START_MS + 50),
        ("now", START_MS + 100),
    ]


def test_re_adding_a_key_replaces_its_timer() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS, TINY)
    wheel.add("a", START_MS + 100)
    wheel.add("a", START_MS + 7)
    assert len(wheel) == 1
    assert wheel.deadline_ms("a") == START_MS + 7
    assert drain(wheel, START_MS + 200) == [("a", START_MS + 7)]


def test_cancel_says_whether_there_was_a_timer() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS)
    wheel.add("a", START_MS + 10)
    wheel.add("b", START_MS + 10)
    assert wheel.cancel("a") is True
    assert wheel.cancel("a") is False
    assert wheel.cancel("never") is False
    assert drain(wheel, START_MS + 10) == [("b", START_MS + 10)]
    assert wheel.cancel("b") is False


def test_keys_may_be_any_hashable() -> None:
    wheel: TimingWheel[tuple[int, str]] = TimingWheel(START_MS)
    wheel.add((1, "x"), START_MS + 1)
    assert wheel.advance(START_MS + 1) == [((1, "x"), START_MS + 1)]


def test_far_timers_sit_in_the_top_level_and_come_down_ahead_of_time() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS, WheelConfig(1, (1024, 64)))
    wheel.add("soon", START_MS + 500)
    wheel.add("minute", START_MS + 60_000)
    wheel.add("hour", START_MS + 3_600_000)
    assert wheel.level_counts() == [1, 1, 1]
    drain(wheel, START_MS + 3_600_000 - 65_536)
    assert wheel.level_counts() == [0, 1, 0]  # promoted a level-2 bucket ahead
    drain(wheel, START_MS + 3_600_000 - 1_000)
    assert wheel.level_counts() == [1, 0, 0]  # and its 1,024 ms bucket
    assert drain(wheel, START_MS + 3_600_000) == [("hour", START_MS + 3_600_000)]


def test_next_work_and_next_deadline() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS, WheelConfig(1, (1024, 64)))
    assert wheel.next_work_ms() is None
    assert wheel.next_deadline_ms() is None
    wheel.add("far", START_MS + 600_000)
    wheel.add("farther", START_MS + 600_001)
    assert wheel.next_deadline_ms() == START_MS + 600_000
    next_ms = wheel.next_work_ms()
    assert next_ms is not None
    assert START_MS < next_ms <= START_MS + 600_000 - 65_536 + 1  # a promotion, ahead
    wheel.add("soon", START_MS + 3)
    assert wheel.next_work_ms() == START_MS + 3
    assert wheel.next_deadline_ms() == START_MS + 3


def test_pending_between_lists_a_time_range_in_deadline_order() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS, TINY)
    for i, offset in enumerate([300, 5, 40, 41, 1_000, 39]):
        wheel.add(f"k{i}", START_MS + offset)
    assert wheel.pending_between(START_MS + 39, START_MS + 301) == [
        ("k5", START_MS + 39),
        ("k2", START_MS + 40),
        ("k3", START_MS + 41),
        ("k0", START_MS + 300),
    ]
    assert wheel.pending_between(START_MS + 10, START_MS + 10) == []


def test_time_going_backwards_releases_nothing_after_the_given_now() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS)
    wheel.add("a", START_MS + 100)
    drain(wheel, START_MS + 50)
    assert drain(wheel, START_MS + 20) == []
    assert wheel.add("b", START_MS + 30) is True
    assert drain(wheel, START_MS + 25) == []
    assert drain(wheel, START_MS + 30) == [("b", START_MS + 30)]
    assert drain(wheel, START_MS + 100) == [("a", START_MS + 100)]


def test_coarse_tick_fires_within_one_tick_never_before() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS, WheelConfig(tick_ms=10, slots_per_level=(4,)))
    wheel.add("a", START_MS + 21)
    assert drain(wheel, START_MS + 28) == []
    assert drain(wheel, START_MS + 29) == [("a", START_MS + 21)]


def test_limits_bound_each_advance_and_promotion_is_incremental() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS, WheelConfig(1, (1024, 64)))
    due_ms = START_MS + 200_000
    for i in range(5_000):
        wheel.add(f"k{i}", due_ms + i % 1000)  # all in one second, far ahead
    counts = wheel.level_counts()
    now_ms = START_MS
    fired: list[tuple[str, int]] = []
    while len(fired) < 5_000:
        now_ms += 1_000
        while True:
            batch = wheel.advance(now_ms, max_fired=64, max_work=100)
            assert len(batch) <= 64
            fired.extend(batch)
            after = wheel.level_counts()
            moved = sum(abs(a - b) for a, b in zip(after, counts, strict=True))
            assert moved <= 2 * 100  # each move leaves one level and enters another
            counts = after
            next_ms = wheel.next_work_ms()
            if next_ms is None or next_ms > now_ms:
                break
    assert sorted(fired) == sorted((f"k{i}", due_ms + i % 1000) for i in range(5_000))
    assert all(d <= now_ms for _, d in fired)


def test_one_advance_returns_ticks_in_order() -> None:
    wheel: TimingWheel[str] = TimingWheel(START_MS, TINY)
    for i in range(50):
        wheel.add(f"k{i}", START_MS + (i * 37) % 101)
    fired = wheel.advance(START_MS + 200)
    assert [d for _, d in fired] == sorted(d for _, d in fired)
    assert len(fired) == 50


@pytest.mark.parametrize(
    ("tick_ms", "slots"), [(0, (4,)), (1, ()), (1, (1,)), (1, (4, 0))], ids=str
)
def test_invalid_configurations_are_refused(tick_ms: int, slots: tuple[int, ...]) -> None:
    with pytest.raises(ConfigError):
        WheelConfig(tick_ms=tick_ms, slots_per_level=slots)


def test_widths_multiply_up_the_levels() -> None:
    assert WheelConfig(tick_ms=2, slots_per_level=(3, 4)).widths_ms() == (2, 6, 24)


def test_cancel_and_replace_reach_a_bucket_in_flight() -> None:
    wheel: TimingWheel[int] = TimingWheel(START_MS, TINY)
    for key in range(6):
        wheel.add(key, START_MS + 40 + key)
    now_ms = START_MS
    while wheel.level_counts()[-1] == 6:  # step until the top bucket starts moving down
        now_ms += 1
        wheel.advance(now_ms, max_work=1)
    assert sum(wheel.level_counts()) == 6
    assert wheel.cancel(0) is True
    assert wheel.cancel(1) is True
    wheel.add(2, START_MS + 45)  # replaced while in flight
    fired = [item for call in [wheel.advance(START_MS + 100)] for item in call]
    assert sorted(fired) == [
        (2, START_MS + 45),
        (3, START_MS + 43),
        (4, START_MS + 44),
        (5, START_MS + 45),
    ]


def test_no_tick_is_released_while_part_of_it_is_in_flight() -> None:
    wheel: TimingWheel[int] = TimingWheel(START_MS, TINY)
    for key in range(6):
        wheel.add(key, START_MS + 40 + key)
    now_ms = START_MS
    while wheel.level_counts()[-1] == 6:
        now_ms += 1
        wheel.advance(now_ms, max_work=1)
    # Promotion fell behind (a starved loop): everything is due at once now.
    fired = drain(wheel, START_MS + 100, max_work=2)
    assert [d for _, d in fired] == [START_MS + 40 + key for key in range(6)]
