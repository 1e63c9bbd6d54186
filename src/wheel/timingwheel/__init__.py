"""The in-memory hierarchical timing wheel and its asyncio driver (pure: no I/O, injected clock).

TimingWheel   the data structure: O(1) add and cancel by key, batched expiry
WheelDriver   fires a wheel on the event loop at UTC instants, in batches
Clock, Alarm  what the driver reads and sleeps on; SystemClock, LoopAlarm,
              and ManualClock (both, under a test's control); `sleep` on an Alarm
GcGovernor    keeps the cyclic GC off a large resident set (gc.freeze)
"""

from wheel.timingwheel.clock import (
    Alarm,
    AlarmHandle,
    Clock,
    LoopAlarm,
    ManualClock,
    SystemClock,
    sleep,
)
from wheel.timingwheel.config import DriverConfig, WheelConfig
from wheel.timingwheel.driver import WheelDriver
from wheel.timingwheel.gcpolicy import GcGovernor, GcPolicy
from wheel.timingwheel.stats import DriverStats, FiredBatch, LatenessStats
from wheel.timingwheel.wheel import TimingWheel

__all__ = [
    "Alarm",
    "AlarmHandle",
    "Clock",
    "DriverConfig",
    "DriverStats",
    "FiredBatch",
    "GcGovernor",
    "GcPolicy",
    "LatenessStats",
    "LoopAlarm",
    "ManualClock",
    "SystemClock",
    "TimingWheel",
    "WheelConfig",
    "WheelDriver",
    "sleep",
]
