"""WheelDriver on real event loops (uvloop, and asyncio's own): events awaited, never timed."""

from __future__ import annotations

import asyncio

from wheel.timingwheel import FiredBatch, LoopAlarm, SystemClock, WheelDriver


class Collector:
    """Collects fired entries and sets an event once `expected` keys have fired."""

    def __init__(self, expected: int) -> None:
        self.clock = SystemClock()
        self.expected = expected
        self.fired: list[tuple[str, int]] = []
        self.seen_at_ms: list[int] = []
        self.done = asyncio.Event()

    def __call__(self, batch: FiredBatch[str]) -> None:
        self.seen_at_ms.append(self.clock.wall_ms())
        self.fired.extend(batch.entries)
        if len(self.fired) >= self.expected:
            self.done.set()


async def fire_three_and_cancel_one() -> Collector:
    sink = Collector(expected=2)
    driver: WheelDriver[str] = WheelDriver(sink, gc_policy=None)
    driver.start()
    now_ms = SystemClock().wall_ms()
    driver.add("a", now_ms + 15)
    driver.add("cancelled", now_ms + 25)
    driver.add("b", now_ms + 40)
    assert driver.cancel("cancelled") is True
    await sink.done.wait()
    driver.close()
    return sink


def check(sink: Collector) -> None:
    assert [key for key, _ in sink.fired] == ["a", "b"]
    for (_, deadline_ms), seen_ms in zip(sink.fired, sink.seen_at_ms, strict=True):
        assert seen_ms >= deadline_ms  # never early by the wall clock


async def test_fires_on_the_running_loop() -> None:
    check(await fire_three_and_cancel_one())


def test_fires_on_asyncios_own_loop() -> None:
    with asyncio.Runner(loop_factory=asyncio.new_event_loop) as runner:
        check(runner.run(fire_three_and_cancel_one()))


async def test_batches_can_feed_a_queue() -> None:
    queue: asyncio.Queue[FiredBatch[str]] = asyncio.Queue()
    driver: WheelDriver[str] = WheelDriver(queue.put_nowait, gc_policy=None)
    driver.start()
    now_ms = SystemClock().wall_ms()
    driver.add_many((f"k{i}", now_ms + 5 + i % 7) for i in range(200))
    keys: set[str] = set()
    while len(keys) < 200:
        batch = await queue.get()
        assert all(late >= 0 for late in batch.lateness_ms())
        keys.update(key for key, _ in batch.entries)
    assert len(driver) == 0
    assert driver.stats.fired == 200
    driver.close()


async def test_loop_alarm_runs_callbacks() -> None:
    alarm = LoopAlarm(asyncio.get_running_loop())
    ran = asyncio.Event()
    alarm.call_later(0, ran.set)
    await ran.wait()
    later = asyncio.Event()
    alarm.call_later(2, later.set)
    cancelled = asyncio.Event()
    alarm.call_later(1, cancelled.set).cancel()
    await later.wait()
    assert not cancelled.is_set()
