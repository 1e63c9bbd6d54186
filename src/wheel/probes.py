"""What a process answers its liveness and readiness probes, kept apart from how they are
served (`metrics_http`), so both nodes and executors report the same way.

    probes = Probes()
    probes.not_ready("waiting for the schema: missing 0012_x")   # before anything waits
    probes.ready()                                               # once it serves
    asyncio.create_task(probes.beat_while_running())            # liveness: the loop turns

Readiness is what the process says about itself. Liveness is only whether its event loop
still turns: a node waiting for Postgres, etcd or a migration is alive and not ready, and
must not be restarted for it. The server's threads read while the loop writes; each read
is of one attribute, which the GIL keeps whole.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

STALL_AFTER_S = 30.0
"""How long the event loop may go without turning before liveness fails: far beyond any
pause a busy node makes (its longest measured is under a second), well inside the time a
stuck process should be left alone."""

_BEAT_S = 1.0


class Probes:
    """A process's answers to `/livez` and `/readyz`."""

    def __init__(
        self,
        *,
        stall_after_s: float = STALL_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stall_after_s = stall_after_s
        self._clock = clock
        self._not_ready: str | None = "starting"
        self._beat = clock()

    def ready(self) -> None:
        self._not_ready = None

    def not_ready(self, reason: str) -> None:
        self._not_ready = reason

    def readiness(self) -> str | None:
        """Why the process is not ready, or None while it is."""
        return self._not_ready

    def liveness(self) -> str | None:
        """Why the process should be restarted, or None while its loop turns."""
        silent_s = self._clock() - self._beat
        if silent_s > self._stall_after_s:
            return f"the event loop has not run for {silent_s:.0f} s"
        return None

    def beat(self) -> None:
        self._beat = self._clock()

    async def beat_while_running(self) -> None:
        """Mark the loop alive every second, until cancelled."""
        while True:
            self.beat()
            await asyncio.sleep(_BEAT_S)
