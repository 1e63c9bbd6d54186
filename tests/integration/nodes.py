"""Scheduler nodes for integration tests: the factory's type, and timings shrunk so
failure paths finish in seconds."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from wheel.scheduler.node import SchedulerNode

NodeFactory = Callable[..., Awaitable[SchedulerNode]]


def fast_config(**overrides: Any) -> dict[str, Any]:
    """Timings shrunk so failure paths finish in seconds."""
    settings: dict[str, Any] = {
        "partitions": 8,
        "session_ttl_s": 3,
        "window_s": 60.0,
        "load_interval_s": 0.5,
        "catch_up_interval_s": 1.0,
        "materialise_interval_s": 1.0,
        "horizon_s": 120.0,
        "lease_s": 2.0,
        "prefetch_ms": 500,  # at most half the lease: a held run keeps its lease
        "heartbeat_interval_s": 0.5,
        "reap_interval_s": 0.25,
        "breaker_cooldown_s": 2.0,
        "pool_size": 4,
    }
    settings.update(overrides)
    return settings
