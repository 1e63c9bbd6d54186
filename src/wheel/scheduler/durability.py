"""Says loudly, at start and then periodically, when an acknowledged job could be lost.

The node reads what its Postgres commits survive (`wheel.store.durability`).
Without a synchronous standby, a job wheel acknowledged lives on one disk: the
node logs a warning when that becomes so (and again every REMIND_S while it
stays so), sets `wheel_postgres_synchronous_standby` to 0 (an alert rule fires
on it), and publishes the reason for `wheel nodes` and the dashboard's
cluster page. With `require_synchronous_standby` the node refuses to start
instead; a standby lost later is warned of, not fatal: stopping the nodes would
delay every run, and Postgres itself decides whether commits wait for one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from wheel.errors import ConfigError, WheelError
from wheel.store.durability import Durability, DurabilityReader

log = logging.getLogger(__name__)

REMIND_S = 600.0


class DurabilityWatch:
    def __init__(
        self,
        reader: DurabilityReader,
        *,
        node_id: str,
        report: Callable[[bool], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`report(safe)` hears every reading (the node's metrics)."""
        self._reader = reader
        self._node_id = node_id
        self._report = report
        self._clock = clock
        self.problem: str | None = None
        """The last reading's reason an acknowledged job could be lost; None while safe."""
        self._said_at: float | None = None

    async def check(self) -> str | None:
        """Read the setup again; say so when it is unsafe. A failed read changes nothing."""
        try:
            found = await self._reader.read()
        except WheelError as exc:
            log.warning("node.durability_unknown", extra={"node": self._node_id,
                                                          "error": str(exc)})  # fmt: skip
            return self.problem
        return self._take(found)

    async def require(self) -> None:
        """Refuse to start on an unsafe setup (`require_synchronous_standby`); a failed read
        fails the start too."""
        problem = self._take(await self._reader.read())
        if problem is not None:
            raise ConfigError("require_synchronous_standby", f"refusing to start: {problem}")

    def _take(self, found: Durability) -> str | None:
        problem, before = found.problem, self.problem
        self.problem = problem
        if self._report is not None:
            self._report(problem is None)
        now = self._clock()
        if problem is None:
            if before is not None or self._said_at is None:
                log.info("node.durable", extra={"node": self._node_id,
                                                "synchronous_standbys": found.synchronous_standbys,
                                                "standby_names": found.standby_names})  # fmt: skip
            self._said_at = now
            return None
        if problem != before or self._said_at is None or now - self._said_at >= REMIND_S:
            log.warning("node.not_durable", extra={"node": self._node_id, "reason": problem})
            self._said_at = now
        return problem
