"""WheelDriver under a ManualClock: when it wakes, what it fires, how it meets clock jumps."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from wheel.errors import ConfigError
from wheel.timingwheel import (
    DriverConfig,
    FiredBatch,
    GcPolicy,
    ManualClock,
    WheelConfig,
    WheelDriver,
)

WALL_MS = 1_700_000_000_000


class Recorder:
    """A sink that keeps every batch and checks, as the driver calls it, that nothing is early."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.batches: list[FiredBatch[str]] = []

    def __call__(self, batch: FiredBatch[str]) -> None:
        assert batch.fired_at_ms == self.clock.wall_ms()
        assert all(late >= 0 for late in batch.lateness_ms())
        self.batches.append(batch)

    @property
    def fired(self) -> list[tuple[str, int]]:
        return [entry for batch in self.batches for entry in batch.entries]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(wall_ms=WALL_MS)


@pytest.fixture
def sink(clock: ManualClock) -> Recorder:
    return Recorder(clock)


def make_driver(
    clock: ManualClock, sink: Recorder, config: DriverConfig | None = None
) -> WheelDriver[str]:
    driver: WheelDriver[str] = WheelDriver(
        sink, clock=clock, alarm=clock, config=config, gc_policy=None
    )
    driver.start()
    return driver


def test_fires_at_the_instant_not_before(clock: ManualClock, sink: Recorder) -> None:
    driver = make_driver(clock, sink)
    assert driver.add("a", WALL_MS + 10) is True
    clock.advance(9)
    assert sink.fired == []
    clock.advance(1)
    assert sink.fired == [("a", WALL_MS + 10)]
    assert sink.batches[0].fired_at_ms == WALL_MS + 10
    assert driver.stats.lateness.max_ms == 0


def test_an_empty_wheel_arms_nothing(clock: ManualClock, sink: Recorder) -> None:
    make_driver(clock, sink)
    assert clock.pending_alarms() == []


def test_one_alarm_for_the_earliest_work(clock: ManualClock, sink: Recorder) -> None:
    driver = make_driver(clock, sink)
    driver.add("late", WALL_MS + 200)
    driver.add("early", WALL_MS + 20)
    assert clock.pending_alarms() == [20]
    driver.cancel("early")
    clock.advance(20)  # the alarm still rings, finds nothing, re-arms
    assert driver.stats.idle_wakeups == 1
    assert clock.pending_alarms() == [200]


def test_long_sleeps_are_capped(clock: ManualClock, sink: Recorder) -> None:
    driver = make_driver(clock, sink, DriverConfig(max_sleep_ms=1000))
    driver.add("hour", WALL_MS + 3_600_000)
    assert clock.pending_alarms() == [1000]


def test_dense_timers_are_coalesced_and_never_early(clock: ManualClock, sink: Recorder) -> None:
    driver = make_driver(clock, sink, DriverConfig(coalesce_ms=3))
    driver.add_many((f"k{i}", WALL_MS + 100 + i) for i in range(300))
    clock.advance(1_000)
    assert sorted(sink.fired) == sorted((f"k{i}", WALL_MS + 100 + i) for i in range(300))
    assert driver.stats.lateness.max_ms <= 3
    assert driver.stats.wakeups <= 300 // 3 + 5
    assert len(driver) == 0


def test_batches_respect_max_batch(clock: ManualClock, sink: Recorder) -> None:
    driver = make_driver(clock, sink, DriverConfig(max_batch=50, backlog_rate_per_s=25_000))
    driver.add_many((f"k{i}", WALL_MS + 10) for i in range(500))
    clock.advance(10)
    assert len(sink.fired) == 50  # one batch now, the rest at 25,000/s
    clock.advance(20)
    assert len(sink.fired) == 500
    assert max(len(b) for b in sink.batches) == 50


def test_timers_far_ahead_arrive_through_every_level(clock: ManualClock, sink: Recorder) -> None:
    config = DriverConfig(max_work=64, max_batch=64, backlog_rate_per_s=10_000_000)
    driver: WheelDriver[str] = WheelDriver(
        sink,
        clock=clock,
        alarm=clock,
        config=config,
        wheel_config=WheelConfig(1, (64, 16)),
        gc_policy=None,
    )
    driver.start()
    # 3,000 timers in one second, a minute ahead: promoted ahead of time in small steps.
    driver.add_many((f"k{i}", WALL_MS + 60_000 + i % 1000) for i in range(3_000))
    clock.advance(61_000)
    assert len(sink.fired) == 3_000
    assert driver.stats.lateness.max_ms <= config.coalesce_ms


def test_adding_a_sooner_timer_rearms(clock: ManualClock, sink: Recorder) -> None:
    driver = make_driver(clock, sink)
    driver.add("far", WALL_MS + 900)
    clock.advance(100)
    driver.add("near", WALL_MS + 105)
    assert clock.pending_alarms()[0] == 105
    clock.advance(5)
    assert sink.fired == [("near", WALL_MS + 105)]


def test_an_overdue_add_fires_on_the_next_step(clock: ManualClock, sink: Recorder) -> None:
    driver = make_driver(clock, sink)
    assert driver.add("past", WALL_MS - 5_000) is False
    clock.run_soon()
    assert sink.fired == [("past", WALL_MS - 5_000)]
    assert driver.stats.lateness.max_ms == 5_000


def test_forward_jump_releases_the_backlog_at_a_bounded_rate(
    clock: ManualClock, sink: Recorder
) -> None:
    config = DriverConfig(max_batch=100, backlog_rate_per_s=20_000, max_sleep_ms=50)
    driver = make_driver(clock, sink, config)
    driver.add_many((f"k{i}", WALL_MS + 1_000 + i) for i in range(2_000))
    clock.advance(1)
    clock.step_wall(10_000)  # the wall clock leaps 10 s: every timer is now due
    while not sink.fired:  # noticed within max_sleep_ms
        clock.advance(1)
    assert clock.monotonic_ms() <= 1 + 50
    for elapsed_ms in range(1, 101):
        clock.advance(1)
        # At most the burst plus what the rate allows for the elapsed monotonic time.
        assert len(sink.fired) <= 100 + 20 * elapsed_ms
    assert len(sink.fired) >= 100 + 20 * 100 - 100  # and no slower than the rate
    clock.advance(100)
    assert len(sink.fired) == 2_000
    fired = [d for _, d in sink.fired]
    assert fired == sorted(fired)  # earliest first
    assert driver.stats.clock_jumps_forward == 1
    assert driver.stats.last_clock_jump_ms == 10_000
    assert driver.stats.throttled > 0


def test_backward_jump_makes_timers_wait_for_the_wall_clock(
    clock: ManualClock, sink: Recorder
) -> None:
    driver = make_driver(clock, sink)
    driver.add("a", WALL_MS + 500)
    clock.advance(100)
    clock.step_wall(-1_000)  # wall reads WALL_MS - 900 now
    driver.add("b", WALL_MS - 800)  # due in 100 ms by the stepped-back clock
    clock.advance(99)
    assert sink.fired == []
    clock.advance(1)
    assert sink.fired == [("b", WALL_MS - 800)]
    clock.advance(1_299)
    assert sink.fired == [("b", WALL_MS - 800)]  # "a" waits for the wall clock
    clock.advance(1)
    assert sink.fired[-1] == ("a", WALL_MS + 500)
    assert driver.stats.clock_jumps_backward == 1
    assert driver.stats.lateness.max_ms == 0


def test_a_failing_sink_does_not_stop_the_driver(clock: ManualClock) -> None:
    seen: list[FiredBatch[str]] = []

    def sink(batch: FiredBatch[str]) -> None:
        seen.append(batch)
        if len(seen) == 1:
            raise RuntimeError("consumer broke")

    driver: WheelDriver[str] = WheelDriver(sink, clock=clock, alarm=clock, gc_policy=None)
    driver.start()
    driver.add("a", WALL_MS + 10)
    driver.add("b", WALL_MS + 20)
    with pytest.raises(RuntimeError, match="consumer broke"):
        clock.advance(10)
    clock.advance(10)
    assert [b.entries for b in seen] == [[("a", WALL_MS + 10)], [("b", WALL_MS + 20)]]


def test_close_stops_firing_and_keeps_timers(clock: ManualClock, sink: Recorder) -> None:
    driver = make_driver(clock, sink)
    driver.add("a", WALL_MS + 10)
    driver.close()
    clock.advance(100)
    assert sink.fired == []
    assert len(driver) == 1
    assert clock.pending_alarms() == []


@pytest.fixture
def unfreeze() -> Iterator[None]:
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("unfreeze")
def test_gc_governor_freezes_after_bulk_adds(clock: ManualClock, sink: Recorder) -> None:
    thresholds = gc.get_threshold()
    driver: WheelDriver[str] = WheelDriver(
        sink,
        clock=clock,
        alarm=clock,
        gc_policy=GcPolicy(freeze_every_added=100, gen0_threshold=5_000),
    )
    driver.start()
    assert driver.stats.gc_freezes == 1
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == 5_000
    driver.add_many((f"k{i}", WALL_MS + 10) for i in range(250))
    assert driver.stats.gc_freezes == 2
    for i in range(99):
        driver.add(f"x{i}", WALL_MS + 20)
    clock.advance(20)
    assert driver.stats.gc_freezes == 2  # 99 since the last freeze
    driver.close()
    assert gc.get_threshold() == thresholds


@pytest.mark.parametrize(
    "kwargs",
    [{"max_batch": 0}, {"max_work": 0}, {"coalesce_ms": -1}, {"coalesce_ms": 5, "max_sleep_ms": 4}],
    ids=str,
)
def test_invalid_driver_configurations_are_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ConfigError):
        DriverConfig(**kwargs)


def test_invalid_gc_policies_are_refused() -> None:
    with pytest.raises(ConfigError):
        GcPolicy(freeze_every_added=0)
    with pytest.raises(ConfigError):
        GcPolicy(gen0_threshold=0)
