"""One live-driver run, in its own process: N timers pending, R of them firing per second.

Run by `timingwheel_bench.py`; prints one JSON line:

    .venv/bin/python benchmarks/timingwheel_live.py 10000 managed 1000000 20

A `WheelDriver` on the loop wheel uses (uvloop) holds `pending` timers: `rate`
a second due evenly through a `seconds`-long window (shortened so that it holds
no more than `pending`), the rest spread over the following ten minutes. Like a
scheduler node, the process keeps one small GC-tracked record per pending timer
(`Occurrence`, in `Records`), the sink drops a record as its timer fires, and a
loader task files `rate` new timers (and records) a second, ten minutes ahead,
so the resident set stays at `pending`.

Lateness is measured by the sink: wall clock when the batch arrives minus the
timer's instant, in fractional ms. CPU % is process CPU time over wall time
during the window (driver, sink and loader together). `gc` is `default` (the
collector as CPython ships it) or `managed` (`GcPolicy()`: freeze at start and
every 10,000 timers added). `gc.callbacks` count the full collections in the
window and time the longest collector pause.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import time
from array import array
from typing import Any

from wheel.eventloop import loop_factory
from wheel.timingwheel import FiredBatch, GcPolicy, SystemClock, WheelDriver

LOAD_CHUNK = 20_000
LOADER_PERIOD_S = 0.005
AHEAD_MS = 600_000


class Records:
    """Occurrence records by key, in 256 dicts: one dict of a million entries with keys
    coming and going compacts itself now and then in one ~90 ms call."""

    def __init__(self) -> None:
        self._shards: list[dict[str, Occurrence]] = [{} for _ in range(256)]

    def add(self, key: str) -> None:
        self._shards[hash(key) & 255][key] = Occurrence(key)

    def drop(self, key: str) -> None:
        del self._shards[hash(key) & 255][key]


class GcPauses:
    """A `gc.callbacks` hook: counts full collections and times the longest pause."""

    def __init__(self) -> None:
        self.full = 0
        self.worst_ms = 0.0
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        self.worst_ms = max(self.worst_ms, (time.perf_counter() - self._began) * 1000)
        if info["generation"] == 2:
            self.full += 1


class Occurrence:
    """What a scheduler keeps per pending timer (tracked by the cyclic GC)."""

    __slots__ = ("attempt", "job_id")

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        self.attempt = 0


async def run(rate: int, gc_mode: str, pending: int, seconds: float) -> dict[str, Any]:
    clock = SystemClock()
    records = Records()
    lateness = array("d")
    window: list[int] = [0, 0]  # [start_ms, end_ms) of the measured deadlines

    def sink(batch: FiredBatch[str]) -> None:
        arrived_ms = time.time_ns() / 1e6
        start_ms, end_ms = window
        for key, deadline_ms in batch.entries:
            records.drop(key)
            if start_ms <= deadline_ms < end_ms:
                lateness.append(arrived_ms - deadline_ms)

    policy = GcPolicy() if gc_mode == "managed" else None
    driver: WheelDriver[str] = WheelDriver(sink, clock=clock, gc_policy=policy)
    in_window = min(int(rate * seconds), pending)
    seconds = in_window / rate
    load_s = pending / 150_000 + 2.0  # generous: the window starts after loading
    start_ms = clock.wall_ms() + int(load_s * 1000)
    window[:] = [start_ms, start_ms + int(seconds * 1000)]
    timers = [(f"occ-{i:09d}", start_ms + i * 1000 // rate) for i in range(in_window)]
    rest = pending - in_window
    far_ms = start_ms + int(seconds * 1000)
    timers.extend(
        (f"occ-{in_window + i:09d}", far_ms + i * AHEAD_MS // max(rest, 1)) for i in range(rest)
    )
    driver.start()
    load_began = time.perf_counter()
    for first in range(0, len(timers), LOAD_CHUNK):  # yield between chunks, as a loader would
        chunk = timers[first : first + LOAD_CHUNK]
        for key, _ in chunk:
            records.add(key)
        driver.add_many(chunk)
        await asyncio.sleep(0)
    load_s = time.perf_counter() - load_began
    del timers

    async def loader() -> None:
        serial = pending
        while True:
            await asyncio.sleep(LOADER_PERIOD_S)
            batch = []
            due_ms = clock.wall_ms() + AHEAD_MS
            for _ in range(int(rate * LOADER_PERIOD_S)):
                key = f"occ-{serial:09d}"
                serial += 1
                records.add(key)
                batch.append((key, due_ms))
            driver.add_many(batch)

    refill = asyncio.create_task(loader())
    await asyncio.sleep(max(0.0, (start_ms - clock.wall_ms()) / 1000))
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    stats_before = (driver.stats.wakeups, driver.stats.idle_wakeups)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds + 0.05)
    cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
    gc.callbacks.remove(pauses)
    refill.cancel()
    driver.close()
    gc.unfreeze()
    ordered = sorted(lateness)
    return {
        "rate": rate,
        "gc": gc_mode,
        "pending": pending,
        "fired_in_window": len(ordered),
        "expected_in_window": in_window,
        "p50_ms": statistics.median(ordered) if ordered else None,
        "p99_ms": ordered[int(0.99 * (len(ordered) - 1))] if ordered else None,
        "max_ms": ordered[-1] if ordered else None,
        "cpu_pct": 100 * cpu_s / wall_s,
        "wakeups_per_s": (driver.stats.wakeups - stats_before[0]) / wall_s,
        "idle_wakeups": driver.stats.idle_wakeups - stats_before[1],
        "gc_freezes": driver.stats.gc_freezes,
        "full_collections": pauses.full,
        "worst_gc_pause_ms": pauses.worst_ms,
        "load_s": load_s,
        "loop": loop_factory().__module__.split(".")[0],
    }


def main(argv: list[str]) -> None:
    rate, gc_mode, pending, seconds = int(argv[0]), argv[1], int(argv[2]), float(argv[3])
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        print(json.dumps(runner.run(run(rate, gc_mode, pending, seconds))))


if __name__ == "__main__":
    main(sys.argv[1:])
