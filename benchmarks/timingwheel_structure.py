"""One structure run, in its own process: insert N timers, cancel 10 %, expire the rest.

Run by `timingwheel_bench.py`; prints one JSON line:

    .venv/bin/python benchmarks/timingwheel_structure.py wheel 1000000 uniform default

Implementations, all keyed by the same str ids with the same int deadlines:
Timers are due uniformly over ten minutes (fewer than a million over proportionally
less time, so the density per step stays the same), or all in one second ("burst").

- `wheel`, `wheel1024`, `wheel3`: `TimingWheel` with the default coarse level (256 ms),
  with one of 1,024 ms, and with (1024, 64); time advanced in 2 ms steps (the
  driver's coalescing) with the driver's default limits.
- `heapq`: (deadline, key) tuples plus a key -> deadline dict, so cancel by key is
  O(1) and lazy (the tuple is skipped when popped); the same 2 ms steps.
- `asyncio`, `uvloop`: `loop.call_at` plus a key -> handle dict for cancel by key.
  Their clocks cannot be simulated, so their timers are spread over `--span-s`
  seconds of real time instead of ten minutes; denser timers mean more timers per
  loop iteration, which favours them.

Times are process CPU seconds (`time.process_time`), so idle waiting and other
processes on the machine count for little. Stalls are measured in a second, untimed
pass: wall and thread CPU time of every `advance` (or heapq step). Memory is the
growth of resident set size during the insert phase, the inputs (keys, deadline
ints) having been built before.
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import json
import random
import sys
import time
from array import array
from collections.abc import Callable
from typing import Any

from wheel.timingwheel import DriverConfig, TimingWheel, WheelConfig

START_MS = 1_700_000_000_000
SPREAD_MS = 600_000
STEP_MS = 2
LEVELS = {
    "wheel": WheelConfig().slots_per_level,
    "wheel1024": (1024,),
    "wheel3": (1024, 64),
}


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def workload(n: int, dist: str, seed: int = 7) -> tuple[list[str], list[int], list[str]]:
    rng = random.Random(seed)
    keys = [f"occ-{i:09d}" for i in range(n)]
    if dist == "uniform":  # a million over ten minutes; fewer over less, as densely
        spread_ms = max(1000, SPREAD_MS * n // 1_000_000)
        deadlines = [START_MS + rng.randrange(spread_ms) for _ in range(n)]
    else:  # "burst": every timer due within one second, five minutes ahead
        deadlines = [START_MS + 300_000 + rng.randrange(1000) for _ in range(n)]
    return keys, deadlines, rng.sample(keys, n // 10)


def timed(phase: Callable[[], Any]) -> tuple[float, Any]:
    started = time.process_time()
    result = phase()
    return time.process_time() - started, result


def run_wheel(
    impl: str, keys: list[str], deadlines: list[int], cancels: list[str]
) -> dict[str, Any]:
    limits = DriverConfig()
    end_ms = max(deadlines) + STEP_MS

    def build() -> TimingWheel[str]:
        return TimingWheel(START_MS, WheelConfig(1, LEVELS[impl]))

    def insert(wheel: TimingWheel[str]) -> None:
        add = wheel.add
        for key, deadline_ms in zip(keys, deadlines, strict=True):
            add(key, deadline_ms)

    def cancel(wheel: TimingWheel[str]) -> None:
        for key in cancels:
            wheel.cancel(key)

    def expire(wheel: TimingWheel[str], stalls: Stalls | None) -> int:
        fired = 0
        advance, next_work = wheel.advance, wheel.next_work_ms
        now_ms = START_MS
        while now_ms < end_ms:
            now_ms += STEP_MS
            while True:
                if stalls is None:
                    fired += len(advance(now_ms, limits.max_batch, limits.max_work))
                else:
                    fired += probe(stalls, advance, now_ms, limits.max_batch, limits.max_work)
                next_ms = next_work()
                if next_ms is None or next_ms > now_ms:
                    break
        return fired

    return measure(build, insert, cancel, expire)


def run_heapq(keys: list[str], deadlines: list[int], cancels: list[str]) -> dict[str, Any]:
    end_ms = max(deadlines) + STEP_MS
    Heap = tuple[list[tuple[int, str]], dict[str, int]]

    def build() -> Heap:
        return [], {}

    def insert(state: Heap) -> None:
        heap, live = state
        push = heapq.heappush
        for key, deadline_ms in zip(keys, deadlines, strict=True):
            live[key] = deadline_ms
            push(heap, (deadline_ms, key))

    def cancel(state: Heap) -> None:
        live = state[1]
        for key in cancels:
            del live[key]

    def expire(state: Heap, stalls: Stalls | None) -> int:
        heap, live = state
        pop = heapq.heappop

        def step(now_ms: int) -> list[tuple[str, int]]:
            out = []
            while heap and heap[0][0] <= now_ms:
                deadline_ms, key = pop(heap)
                if live.get(key) == deadline_ms:
                    del live[key]
                    out.append((key, deadline_ms))
            return out

        fired = 0
        now_ms = START_MS
        while now_ms < end_ms:
            now_ms += STEP_MS
            if stalls is None:
                fired += len(step(now_ms))
            else:
                fired += probe(stalls, step, now_ms)
        return fired

    return measure(build, insert, cancel, expire)


class Stalls:
    """Wall and thread CPU seconds of each step, in arrays: a list of tuples would be
    300k objects for the cyclic GC to walk, and its pauses would be measured too."""

    def __init__(self) -> None:
        self.wall = array("d")
        self.cpu = array("d")

    def __len__(self) -> int:
        return len(self.wall)


def probe(stalls: Stalls, step: Callable[..., list[Any]], *args: int) -> int:
    """Run one step, noting its wall and thread CPU time."""
    wall, cpu = time.perf_counter(), time.thread_time()
    count = len(step(*args))
    stalls.wall.append(time.perf_counter() - wall)
    stalls.cpu.append(time.thread_time() - cpu)
    return count


def measure(
    build: Callable[[], Any],
    insert: Callable[[Any], None],
    cancel: Callable[[Any], None],
    expire: Callable[[Any, Stalls | None], int],
) -> dict[str, Any]:
    """Time the three phases, then repeat them untimed, measuring every step's stall."""
    state = build()
    rss = rss_bytes()
    insert_s, _ = timed(lambda: insert(state))
    grown = rss_bytes() - rss
    cancel_s, _ = timed(lambda: cancel(state))
    expire_s, fired = timed(lambda: expire(state, None))
    del state
    gc.collect()
    state = build()
    insert(state)
    cancel(state)
    stalls = Stalls()
    expire(state, stalls)
    return result(insert_s, cancel_s, expire_s, fired, grown, stalls)


def run_loop(
    impl: str, keys: list[str], deadlines: list[int], cancels: list[str], span_s: float
) -> dict[str, Any]:
    if impl == "uvloop":
        import uvloop

        factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    else:
        factory = asyncio.new_event_loop
    scale_s = span_s / (max(deadlines) - min(deadlines) + 1)
    first_ms = min(deadlines)
    offsets = [(d - first_ms) * scale_s for d in deadlines]

    async def main() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        expected = len(keys) - len(cancels)
        done = asyncio.Event()
        count = [0]

        def fire(_key: str) -> None:
            count[0] += 1
            if count[0] == expected:
                done.set()

        handles: dict[str, asyncio.TimerHandle] = {}
        # Far enough ahead that inserting does not overrun the first timers.
        base = loop.time() + 1.0 + 4e-6 * len(keys)
        whens = [base + offset for offset in offsets]
        gc.freeze()  # like the other inputs
        rss = rss_bytes()

        def insert() -> None:
            call_at = loop.call_at
            for key, when in zip(keys, whens, strict=True):
                handles[key] = call_at(when, fire, key)

        insert_s, _ = timed(insert)
        grown = rss_bytes() - rss

        def cancel() -> None:
            for key in cancels:
                handles.pop(key).cancel()

        cancel_s, _ = timed(cancel)
        overdue = sum(1 for when in whens if when <= loop.time())
        started = time.process_time()
        await done.wait()
        expire_s = time.process_time() - started
        stats = result(insert_s, cancel_s, expire_s, count[0], grown, Stalls())
        stats["overdue_at_expire"] = overdue
        return stats

    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main())


def result(
    insert_s: float,
    cancel_s: float,
    expire_s: float,
    fired: int,
    grown: int,
    stalls: Stalls,
) -> dict[str, Any]:
    walls = sorted(stalls.wall) if stalls else []
    return {
        "insert_s": insert_s,
        "cancel_s": cancel_s,
        "expire_s": expire_s,
        "fired": fired,
        "rss_grown": grown,
        "worst_stall_ms": walls[-1] * 1000 if walls else None,
        "p9999_stall_ms": walls[int(0.9999 * (len(walls) - 1))] * 1000 if walls else None,
        "worst_stall_cpu_ms": max(stalls.cpu) * 1000 if stalls else None,
        "steps": len(walls),
    }


def main(argv: list[str]) -> None:
    impl, n, dist, gc_mode = argv[0], int(argv[1]), argv[2], argv[3]
    span_s = float(argv[4]) if len(argv) > 4 else 30.0
    keys, deadlines, cancels = workload(n, dist)
    # The inputs (three big lists) leave the collector's sight, so that its pauses
    # measure what each structure allocates, not the harness.
    gc.collect()
    gc.freeze()
    if gc_mode == "off":
        gc.disable()
    if impl in LEVELS:
        stats = run_wheel(impl, keys, deadlines, cancels)
    elif impl == "heapq":
        stats = run_heapq(keys, deadlines, cancels)
    else:
        stats = run_loop(impl, keys, deadlines, cancels, span_s)
    stats.update(impl=impl, n=n, dist=dist, gc=gc_mode, cancelled=len(cancels))
    print(json.dumps(stats))


if __name__ == "__main__":
    main(sys.argv[1:])
