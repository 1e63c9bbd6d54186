"""Frozen, validated settings of the wheel and of its driver."""

from __future__ import annotations

from dataclasses import dataclass

from wheel.errors import ConfigError


@dataclass(frozen=True, slots=True)
class WheelConfig:
    """Shape of a `TimingWheel`: the fine tick and how many buckets make the next level's one.

    `WheelConfig(tick_ms=1, slots_per_level=(1024, 64))` gives three levels
    whose buckets are 1 ms, 1,024 ms and 65,536 ms wide; the default, two
    levels of 1 ms and 256 ms (see `TimingWheel` for why).
    """

    tick_ms: int = 1
    """Width of a level-0 bucket; a timer fires at most `tick_ms - 1` after its instant."""

    slots_per_level: tuple[int, ...] = (256,)
    """Level i+1's bucket width is level i's times `slots_per_level[i]`; one entry per level
    above level 0. The last level has no upper bound (its buckets are hashed)."""

    def __post_init__(self) -> None:
        if self.tick_ms < 1:
            raise ConfigError("tick_ms", f"must be >= 1, got {self.tick_ms}")
        if not self.slots_per_level:
            raise ConfigError("slots_per_level", "needs at least one level above level 0")
        for slots in self.slots_per_level:
            if slots < 2:
                raise ConfigError("slots_per_level", f"each entry must be >= 2, got {slots}")

    def widths_ms(self) -> tuple[int, ...]:
        """Bucket width of every level, fine to coarse."""
        widths = [self.tick_ms]
        for slots in self.slots_per_level:
            widths.append(widths[-1] * slots)
        return tuple(widths)


@dataclass(frozen=True, slots=True)
class DriverConfig:
    """How the asyncio driver paces the wheel.

    `DriverConfig(coalesce_ms=2, max_batch=512)` is the default: wake-ups at
    least 2 ms apart while timers are dense, at most 512 timers per batch.
    """

    max_batch: int = 512
    """Most timers handed to the sink in one batch (one loop callback)."""

    max_work: int = 512
    """Most timer moves (promotions plus releases) in one step; bounds a step's stall
    (about 1 ms on the slow shared 2-core machine of docs/benchmarks.md)."""

    coalesce_ms: int = 2
    """Least time between two wake-ups when nothing is overdue; trades lateness for CPU."""

    max_sleep_ms: int = 1000
    """Longest single sleep: a wall-clock jump is noticed within this long."""

    backlog_rate_per_s: int = 100_000
    """Release rate once a backlog forms (a wall-clock jump forwards, a spike): a token
    bucket of `max_batch` tokens refilled at this rate on the monotonic clock."""

    clock_jump_ms: int = 100
    """A change of wall-minus-monotonic larger than this between wake-ups is a clock jump."""

    def __post_init__(self) -> None:
        for name in ("max_batch", "max_work", "max_sleep_ms", "backlog_rate_per_s"):
            value = getattr(self, name)
            if value < 1:
                raise ConfigError(name, f"must be >= 1, got {value}")
        for name in ("coalesce_ms", "clock_jump_ms"):
            value = getattr(self, name)
            if value < 0:
                raise ConfigError(name, f"must be >= 0, got {value}")
        if self.coalesce_ms > self.max_sleep_ms:
            raise ConfigError("coalesce_ms", "must not exceed max_sleep_ms")
