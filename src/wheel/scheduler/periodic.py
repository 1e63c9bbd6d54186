"""A node's periodic work: run, sleep a jittered interval, and never give up.

    task = every("reaper", 5.0, engine.reap)

A failure is retried with backoff (0.2 s doubling, at most the interval and
5 s). A `WheelError` is the store or etcd away: a warning with its message.
Anything else is a bug: logged with its traceback, and the loop goes on, so
one broken piece of periodic work never stops the others.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

from wheel.cancelling import cancelled_meanwhile
from wheel.errors import WheelError

log = logging.getLogger(__name__)

RETRY_MAX_S = 5.0


def jitter(seconds: float) -> float:
    """A little randomness so nodes' periodic work does not line up."""
    return seconds * (0.8 + 0.4 * random.random())


def every(
    name: str, interval_s: float, work: Callable[[], Awaitable[object]]
) -> asyncio.Task[None]:
    """A task running `work` every `interval_s` (jittered) until cancelled."""

    async def loop() -> None:
        failures = 0
        while True:
            try:
                await work()
                cancelled_meanwhile()  # the work may have lost it (wheel.cancelling)
                failures = 0
                await asyncio.sleep(jitter(interval_s))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                cancelled_meanwhile()
                failures += 1
                if isinstance(exc, WheelError):
                    log.warning("node.loop_failed", extra={"loop": name, "error": str(exc)})
                else:
                    log.exception("node.loop_failed", extra={"loop": name})
                await asyncio.sleep(min(interval_s, 0.1 * 2**failures, RETRY_MAX_S))

    return asyncio.create_task(loop(), name=name)
