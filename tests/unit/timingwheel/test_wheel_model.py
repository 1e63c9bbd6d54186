"""The wheel against a reference model (a heap) over random operations and tiny wheels.

Tiny configurations (1-3 ms ticks, 2-4 slots a level, up to four levels)
make every level, every promotion path and the in-flight buckets run within
a few hundred milliseconds of simulated time.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from wheel.timingwheel import TimingWheel, WheelConfig

START_MS = 1_000
UNLIMITED = 1 << 30

configs = st.builds(
    WheelConfig,
    tick_ms=st.sampled_from([1, 1, 2, 3]),
    slots_per_level=st.lists(st.integers(2, 4), min_size=1, max_size=3).map(tuple),
)
keys = st.integers(0, 9)
limits = st.sampled_from([1, 2, 5, UNLIMITED])
# Offsets and steps are mostly small, so timers often sit a tick or two from now.
offsets = st.one_of(st.integers(-3, 12), st.integers(-10, 400))
steps = st.one_of(st.integers(0, 4), st.integers(-15, 60))
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), keys, offsets),
        st.tuples(st.just("cancel"), keys, st.just(0)),
        st.tuples(st.just("advance"), steps, st.tuples(limits, limits)),
        # One `advance` call with small limits: leaves buckets in flight for the next op.
        st.tuples(st.just("step"), st.integers(0, 30), st.tuples(limits, st.integers(1, 4))),
    ),
    max_size=120,
)


@dataclass
class HeapModel:
    """Live timers in a dict, their order in a heap with lazy deletion."""

    tick_ms: int
    live: dict[int, int] = field(default_factory=dict)
    heap: list[tuple[int, int, int]] = field(default_factory=list)
    order: itertools.count[int] = field(default_factory=itertools.count)

    def add(self, key: int, deadline_ms: int) -> None:
        self.live[key] = deadline_ms
        heapq.heappush(self.heap, (deadline_ms, next(self.order), key))

    def cancel(self, key: int) -> bool:
        return self.live.pop(key, None) is not None

    def due(self, now_ms: int) -> set[tuple[int, int]]:
        """Live timers whose tick has ended by now_ms (popped as they leave)."""
        found: set[tuple[int, int]] = set()
        kept: list[tuple[int, int, int]] = []
        while self.heap and self._tick_end(self.heap[0][0]) <= now_ms:
            deadline_ms, order, key = heapq.heappop(self.heap)
            if self.live.get(key) == deadline_ms:
                found.add((key, deadline_ms))
                kept.append((deadline_ms, order, key))
        for entry in kept:  # still live until the wheel fires them
            heapq.heappush(self.heap, entry)
        return found

    def _tick_end(self, deadline_ms: int) -> int:
        return (deadline_ms // self.tick_ms + 1) * self.tick_ms - 1


def drain(
    wheel: TimingWheel[int], now_ms: int, max_fired: int, max_work: int
) -> list[list[tuple[int, int]]]:
    calls = []
    while True:
        calls.append(wheel.advance(now_ms, max_fired, max_work))
        next_ms = wheel.next_work_ms()
        if next_ms is None or next_ms > now_ms:
            return calls


@settings(max_examples=400, deadline=None)
@given(config=configs, ops=operations)
def test_wheel_fires_what_the_heap_model_fires(
    config: WheelConfig, ops: list[tuple[str, int, object]]
) -> None:
    wheel: TimingWheel[int] = TimingWheel(START_MS, config)
    model = HeapModel(config.tick_ms)
    now_ms = START_MS
    for op, a, b in ops:
        if op == "add":
            assert isinstance(b, int)
            deadline_ms = now_ms + b
            pending = wheel.add(a, deadline_ms)
            assert pending == (deadline_ms > now_ms)
            model.add(a, deadline_ms)
        elif op == "cancel":
            assert wheel.cancel(a) == model.cancel(a)
        elif op == "step":
            assert isinstance(b, tuple)
            now_ms += a
            expected = model.due(now_ms)
            released = wheel.advance(now_ms, *b)
            assert len(released) <= b[0]
            assert set(released) <= expected, "a single call releases only due timers"
            assert len(released) == len(set(released))
            for key, deadline_ms in released:
                assert model.live.pop(key) == deadline_ms
        else:
            assert isinstance(b, tuple)
            now_ms += a
            expected = model.due(now_ms)
            fired: list[tuple[int, int]] = []
            for call in drain(wheel, now_ms, *b):
                assert len(call) <= b[0]
                fired.extend(call)
            ticks = [d // config.tick_ms for _, d in fired]
            assert ticks == sorted(ticks), "ticks are released in order, each once complete"
            assert len(fired) == len(set(fired)), "nothing fires twice"
            assert all(d <= now_ms for _, d in fired), "nothing fires before its instant"
            # Exactly the model's due set: nothing later than one tick, nothing extra.
            assert set(fired) == expected
            for key, deadline_ms in fired:
                assert model.live.pop(key) == deadline_ms
        assert len(wheel) == len(model.live)
        assert sum(wheel.level_counts()) == len(model.live)
        assert wheel.next_deadline_ms() == min(model.live.values(), default=None)
    # Nothing lost: far enough ahead, everything still live fires once.
    end_ms = now_ms + 10_000
    rest = [item for call in drain(wheel, end_ms, UNLIMITED, UNLIMITED) for item in call]
    assert sorted(rest) == sorted(model.live.items())
    assert len(wheel) == 0
    assert wheel.next_work_ms() is None


@settings(max_examples=150, deadline=None)
@given(
    config=configs,
    offsets=st.lists(st.integers(0, 300), min_size=1, max_size=60),
    window_ms=st.integers(0, 300),
)
def test_pending_between_matches_a_scan(
    config: WheelConfig, offsets: list[int], window_ms: int
) -> None:
    wheel: TimingWheel[int] = TimingWheel(START_MS, config)
    for key, offset in enumerate(offsets):
        wheel.add(key, START_MS + offset)
    live = {key: START_MS + offset for key, offset in enumerate(offsets)}
    for _ in range(3):  # small limits leave buckets in flight
        for key, _deadline_ms in wheel.advance(START_MS + 40, 3, 3):
            del live[key]
    start_ms, end_ms = START_MS + window_ms, START_MS + window_ms + 50
    expected = sorted((k, d) for k, d in live.items() if start_ms <= d < end_ms)
    assert sorted(wheel.pending_between(start_ms, end_ms)) == expected
