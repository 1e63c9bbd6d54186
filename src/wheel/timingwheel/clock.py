"""Clocks and alarms the driver is given: the system's, or a manual pair for tests.

The driver needs two clocks: the wall clock, because timers carry UTC
instants (milliseconds since the epoch) and fire when the wall clock says so,
and the monotonic clock, which never jumps, to pace itself and to notice when
the wall clock does. It sleeps through an `Alarm` — the event loop in
production, `ManualClock` in tests, which moves only when a test advances it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    """Integer-millisecond readings of the wall and monotonic clocks."""

    def wall_ms(self) -> int:
        """UTC milliseconds since the epoch; may jump either way."""
        ...

    def monotonic_ms(self) -> int:
        """Milliseconds from an arbitrary origin; never goes backwards."""
        ...


class AlarmHandle(Protocol):
    """A pending alarm callback that can be withdrawn."""

    def cancel(self) -> None: ...


class Alarm(Protocol):
    """Runs a callback later, on the thread that owns the driver."""

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> AlarmHandle:
        """Run `callback` no earlier than `delay_ms` from now (monotonic)."""
        ...

    def call_soon(self, callback: Callable[[], None]) -> AlarmHandle:
        """Run `callback` after whatever is already waiting to run."""
        ...


class SystemClock:
    """The operating system's clocks, truncated to whole milliseconds."""

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class LoopAlarm:
    """Alarms on an asyncio event loop (uvloop's or asyncio's).

    uvloop keeps its timers in whole milliseconds and measures from the time
    it cached at the start of the loop iteration, so a callback could run up
    to a millisecond before `delay_ms` has passed; this alarm refreshes that
    cache and asks uvloop for 1 ms more. The driver re-reads the clocks when
    called and fires nothing that is not due anyway, so an early call would
    cost one extra wake-up, never an early timer.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        uvloop = type(loop).__module__.startswith("uvloop")
        # uvloop measures from its cached loop time (refreshed by `time()`) in whole
        # milliseconds, so a timer can run up to 1 ms short: ask for 1 ms more.
        self._margin_s = 0.001 if uvloop else 0.0

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> AlarmHandle:
        if delay_ms <= 0:
            return self._loop.call_soon(callback)
        self._loop.time()
        return self._loop.call_later(delay_ms / 1000 + self._margin_s, callback)

    def call_soon(self, callback: Callable[[], None]) -> AlarmHandle:
        return self._loop.call_soon(callback)


async def sleep(seconds: float, alarm: Alarm | None = None) -> None:
    """`asyncio.sleep(seconds)`, or woken by `alarm` when one is given (a test's
    `ManualClock`: then only advancing it ends the wait)."""
    if alarm is None:
        await asyncio.sleep(seconds)
        return
    woken = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    handle = alarm.call_later(math.ceil(seconds * 1000), wake)
    try:
        await woken
    finally:
        handle.cancel()


class _ManualHandle:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A `Clock` and an `Alarm` that move only when a test says so.

    `advance(ms)` moves both clocks and runs the alarms that come due, in
    order, each seeing the clocks at its own due time; `step_wall(ms)` moves
    only the wall clock, as an NTP step or an operator would.

        clock = ManualClock(wall_ms=1_700_000_000_000)
        clock.advance(5)   # runs whatever was due within the next 5 ms
    """

    def __init__(self, wall_ms: int = 1_700_000_000_000, monotonic_ms: int = 0) -> None:
        self._wall_ms = wall_ms
        self._monotonic_ms = monotonic_ms
        self._order = itertools.count()
        self._alarms: list[tuple[int, int, _ManualHandle]] = []

    def wall_ms(self) -> int:
        return self._wall_ms

    def monotonic_ms(self) -> int:
        return self._monotonic_ms

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> AlarmHandle:
        handle = _ManualHandle(callback)
        due_ms = self._monotonic_ms + max(0, delay_ms)
        heapq.heappush(self._alarms, (due_ms, next(self._order), handle))
        return handle

    def call_soon(self, callback: Callable[[], None]) -> AlarmHandle:
        return self.call_later(0, callback)

    def pending_alarms(self) -> list[int]:
        """Monotonic due times of the alarms not yet run or cancelled, earliest first."""
        return sorted(due for due, _, handle in self._alarms if not handle.cancelled)

    def advance(self, ms: int) -> int:
        """Move both clocks `ms` forward, running alarms as they come due; returns how many ran."""
        if ms < 0:
            raise ValueError("the monotonic clock cannot go backwards")
        end_ms = self._monotonic_ms + ms
        ran = 0
        while self._alarms and self._alarms[0][0] <= end_ms:
            due_ms, _, handle = heapq.heappop(self._alarms)
            if handle.cancelled:
                continue
            self._wall_ms += max(0, due_ms - self._monotonic_ms)
            self._monotonic_ms = max(self._monotonic_ms, due_ms)
            handle.callback()
            ran += 1
        self._wall_ms += end_ms - self._monotonic_ms
        self._monotonic_ms = end_ms
        return ran

    def run_soon(self) -> int:
        """Run the alarms already due (call_soon ones included) without moving time."""
        return self.advance(0)

    def step_wall(self, ms: int) -> None:
        """Jump the wall clock by `ms` (either sign); the monotonic clock does not move."""
        self._wall_ms += ms
