"""The asyncio driver: fires a `TimingWheel`'s timers at their UTC instants, in batches."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

from wheel.timingwheel.clock import Alarm, AlarmHandle, Clock, LoopAlarm, SystemClock
from wheel.timingwheel.config import DriverConfig, WheelConfig
from wheel.timingwheel.gcpolicy import GcGovernor, GcPolicy
from wheel.timingwheel.stats import DriverStats, FiredBatch
from wheel.timingwheel.wheel import TimingWheel

K = TypeVar("K", bound=Hashable)

logger = logging.getLogger(__name__)


class WheelDriver(Generic[K]):
    """Runs a `TimingWheel` on an event loop and hands due timers to a sink in batches.

        driver = WheelDriver(queue.put_nowait)   # on the running loop
        driver.start()
        driver.add("job-1@20250101T000000Z", deadline_ms)

    Sleeping. One alarm is armed at a time, for the earliest thing the wheel
    has to do: release a due tick or promote a bucket ahead of time. It is
    re-armed after each step and when an `add` needs an earlier one. While
    timers are dense, wake-ups are at least `coalesce_ms` apart, so one wake-up
    releases everything due in that window (lateness <= coalesce_ms plus the
    step itself). A step does at most `max_work` moves and hands out at most
    `max_batch` timers; more work goes to the next step via `call_soon`, so
    other callbacks run in between.

    Never early. Timers carry UTC instants; the driver sleeps on the
    monotonic clock (the loop's timers) for `deadline - wall_now` and, when
    woken, reads the wall clock again and releases only what is due by it. A
    wake-up that comes early (uvloop keeps whole milliseconds) releases
    nothing and re-arms.

    The sink receives `FiredBatch` objects and must only hand them over (e.g.
    `asyncio.Queue.put_nowait`, `deque.append`): it runs inside the step, and
    a released timer is gone from the wheel. If it raises, the step still
    re-arms and the exception goes to the loop's exception handler.

    Wall-clock jumps. The driver compares wall minus monotonic at each
    wake-up; a change beyond `clock_jump_ms` is counted and logged. Sleeps
    are capped at `max_sleep_ms`, so a jump is seen within that long.
    - Forwards: everything the new time makes due fires, earliest first, no
      faster than `backlog_rate_per_s` (a token bucket of `max_batch` on the
      monotonic clock), so the consumer is not flooded; lateness shows it.
    - Backwards: timers wait for the wall clock to reach their instants. An
      instant is a UTC time agreed with other nodes and the database; a clock
      stepped back was ahead, so firing on the old reading would fire early
      by the corrected clock. (Re-anchoring to the monotonic clock would keep
      local spacing but break that agreement.)

    Loading. `add` is O(1) amortised, but a dict doubling its table copies
    every entry in one call (tens of ms at a million; CPython offers no way
    around it), so a bulk load should go in chunks (`add_many` of ~10-20k)
    with the loop yielded to in between, as the live benchmark does.

    Garbage collector. With a `GcPolicy` (the default) a `GcGovernor`
    freezes the resident set at start and after every `freeze_every_added`
    timers added; see `wheel.timingwheel.gcpolicy`. `gc_policy=None` leaves
    the collector alone.

    Concurrency contract: like the wheel, one thread (the loop's); call
    `add`, `cancel` and `start` from it.
    """

    def __init__(
        self,
        sink: Callable[[FiredBatch[K]], None],
        *,
        clock: Clock | None = None,
        alarm: Alarm | None = None,
        wheel_config: WheelConfig | None = None,
        config: DriverConfig | None = None,
        gc_policy: GcPolicy | None = GcPolicy(),  # noqa: B008 - frozen, shared safely
    ) -> None:
        self._clock: Clock = clock or SystemClock()
        self._alarm = alarm
        self._sink = sink
        self._config = config or DriverConfig()
        self.wheel: TimingWheel[K] = TimingWheel(self._clock.wall_ms(), wheel_config)
        self.stats = DriverStats()
        self._governor = GcGovernor(gc_policy) if gc_policy is not None else None
        self._handle: AlarmHandle | None = None
        self._armed_wall_ms: int | None = None
        self._running = False
        self._added = 0
        self._skew_ms = self._clock.wall_ms() - self._clock.monotonic_ms()
        self._tokens = float(self._config.max_batch)
        self._tokens_mono_ms = self._clock.monotonic_ms()
        self._busy_mono_ms = self._tokens_mono_ms - self._config.coalesce_ms

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Arm the first alarm; without an injected alarm, uses the running loop."""
        if self._running:
            return
        if self._alarm is None:
            self._alarm = LoopAlarm(asyncio.get_running_loop())
        self._running = True
        if self._governor is not None:
            self._governor.start()
            self.stats.gc_freezes = self._governor.freezes
        self._arm(self._clock.wall_ms(), self._clock.monotonic_ms())

    def close(self) -> None:
        """Stop firing; pending timers stay in `wheel`. The GC thresholds are restored."""
        self._running = False
        self._disarm()
        if self._governor is not None:
            self._governor.stop()

    # -- timers ------------------------------------------------------------------------------

    def add(self, key: K, deadline_ms: int) -> bool:
        """File a timer (replacing `key`'s); False if it is already due (it fires next step)."""
        pending = self.wheel.add(key, deadline_ms)
        self._added += 1
        self._rearm_if_sooner()
        return pending

    def add_many(self, items: Iterable[tuple[K, int]]) -> int:
        """File many timers with one re-arm; returns how many were already due."""
        add = self.wheel.add
        due = count = 0
        for key, deadline_ms in items:
            count += 1
            if not add(key, deadline_ms):
                due += 1
        self._added += count
        self._note_added()
        self._rearm_if_sooner()
        return due

    def cancel(self, key: K) -> bool:
        """Drop `key`'s timer; False if it was not pending. The alarm is left as is."""
        return self.wheel.cancel(key)

    def __len__(self) -> int:
        return len(self.wheel)

    # -- the step ----------------------------------------------------------------------------

    def step(self) -> None:
        """Release what is due now and re-arm; the alarm's callback (tests may call it)."""
        self._handle = None
        self._armed_wall_ms = None
        if not self._running:
            return
        config, stats = self._config, self.stats
        wall_ms, mono_ms = self._clock.wall_ms(), self._clock.monotonic_ms()
        self._observe_clock(wall_ms, mono_ms)
        self._note_added()
        self._tokens = min(
            float(config.max_batch),
            self._tokens + (mono_ms - self._tokens_mono_ms) * config.backlog_rate_per_s / 1000,
        )
        self._tokens_mono_ms = mono_ms
        room = min(config.max_batch, int(self._tokens))
        stats.wakeups += 1
        try:
            entries = self.wheel.advance(wall_ms, room, config.max_work)
            if entries:
                self._busy_mono_ms = mono_ms
                self._tokens -= len(entries)
                batch = FiredBatch(entries, wall_ms)
                stats.batches += 1
                stats.fired += len(entries)
                stats.lateness.record(batch)
                self._sink(batch)
            else:
                stats.idle_wakeups += 1
        finally:
            self._arm(wall_ms, mono_ms)

    def _arm(self, wall_ms: int, mono_ms: int) -> None:
        """Arm the one alarm for the wheel's next work (nothing if it has none)."""
        self._disarm()
        if not self._running:
            return
        assert self._alarm is not None
        config = self._config
        next_ms = self.wheel.next_work_ms()
        if next_ms is None:
            return
        if next_ms <= wall_ms:
            self._armed_wall_ms = wall_ms
            if self._tokens >= 1:
                self._handle = self._alarm.call_soon(self.step)
            else:
                # Out of backlog tokens: let them refill for a coalescing interval.
                self.stats.throttled += 1
                self._handle = self._alarm.call_later(max(1, config.coalesce_ms), self.step)
            return
        # Sleep until the work is due, but not within `coalesce_ms` of the last
        # busy wake-up, and never so long that a wall-clock jump goes unseen.
        delay_ms = max(next_ms - wall_ms, self._busy_mono_ms + config.coalesce_ms - mono_ms)
        delay_ms = min(delay_ms, config.max_sleep_ms)
        self._armed_wall_ms = wall_ms + delay_ms
        self._handle = self._alarm.call_later(delay_ms, self.step)

    def _disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed_wall_ms = None

    def _rearm_if_sooner(self) -> None:
        if not self._running:
            return
        next_ms = self.wheel.next_work_ms()
        if next_ms is not None and (self._armed_wall_ms is None or next_ms < self._armed_wall_ms):
            self._arm(self._clock.wall_ms(), self._clock.monotonic_ms())

    def _note_added(self) -> None:
        if self._governor is not None and self._added:
            self._governor.note_added(self._added)
            self.stats.gc_freezes = self._governor.freezes
        self._added = 0

    def _observe_clock(self, wall_ms: int, mono_ms: int) -> None:
        skew_ms = wall_ms - mono_ms
        jump_ms = skew_ms - self._skew_ms
        self._skew_ms = skew_ms
        if abs(jump_ms) <= self._config.clock_jump_ms:
            return
        stats = self.stats
        stats.last_clock_jump_ms = jump_ms
        if jump_ms > 0:
            stats.clock_jumps_forward += 1
        else:
            stats.clock_jumps_backward += 1
        logger.warning(
            "timingwheel.clock_jump",
            extra={"jump_ms": jump_ms, "wall_ms": wall_ms, "pending": len(self.wheel)},
        )
