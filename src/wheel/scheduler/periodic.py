"""A node's periodic work: run, sleep a jittered interval, and never give up.

    task = every("reaper", 5.0, engine.reap)

A failure is retried with backoff (0.2 s doubling, at most the interval and
5 s). A `WheelError` is the store or etcd away: a warning with its message.
Anything else is a bug: logged with its traceback, and the loop goes on, so
one broken piece of periodic work never stops the others.

It waits on the running loop, or on an injected `Alarm` (a test's `ManualClock`):

    task = every("window", 1.0, loader.tick, alarm=clock, rand=lambda: 0.5)
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

from wheel.cancelling import cancelled_meanwhile
from wheel.errors import WheelError
from wheel.timingwheel import Alarm, sleep

log = logging.getLogger(__name__)

RETRY_MAX_S = 5.0


def jitter(seconds: float, rand: Callable[[], float] = random.random) -> float:
    """A little randomness so nodes' periodic work does not line up."""
    return seconds * (0.8 + 0.4 * rand())


def every(
    name: str,
    interval_s: float,
    work: Callable[[], Awaitable[object]],
    *,
    alarm: Alarm | None = None,
    rand: Callable[[], float] = random.random,
) -> asyncio.Task[None]:
    """A task running `work` every `interval_s` (jittered by `rand`) until cancelled; it
    waits on the running loop, or on `alarm` when one is given."""

    async def loop() -> None:
        failures = 0
        while True:
            try:
                await work()
                cancelled_meanwhile()  # the work may have lost it (wheel.cancelling)
                failures = 0
                await sleep(jitter(interval_s, rand), alarm)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                cancelled_meanwhile()
                failures += 1
                if isinstance(exc, WheelError):
                    log.warning("node.loop_failed", extra={"loop": name, "error": str(exc)})
                else:
                    log.exception("node.loop_failed", extra={"loop": name})
                await sleep(min(interval_s, 0.1 * 2**failures, RETRY_MAX_S), alarm)

    return asyncio.create_task(loop(), name=name)
