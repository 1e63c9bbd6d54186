"""Outbox: every result stays here until the scheduler acknowledges it.

A result is sent at once on the stream its dispatch came on. It leaves only
on `ResultAccepted` or `StaleFence` for its (execution id, fence). When the
stream it went out on breaks, it is sent again on the router's choice (the
partition owner's stream, else any); while no stream is up it waits for one;
and a result sent but not acknowledged within RESEND_MIN_S is sent again,
the wait doubling to RESEND_MAX_S. A node may therefore see a result twice:
the store's fence check makes recording it idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from wheel.executor.connection import Stream
from wheel.executor.messages import Report
from wheel.executor.routing import Router

log = logging.getLogger(__name__)

RESEND_MIN_S = 5.0
RESEND_MAX_S = 60.0


@dataclass(slots=True)
class _Pending:
    report: Report
    sent_on: Stream | None
    due: float
    """Monotonic instant to send again unless acknowledged first."""
    delay_s: float


class Outbox:
    def __init__(
        self,
        router: Router,
        *,
        resend_min_s: float = RESEND_MIN_S,
        resend_max_s: float = RESEND_MAX_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._router = router
        self._resend_min_s = resend_min_s
        self._resend_max_s = resend_max_s
        self._clock = clock
        self._pending: dict[tuple[str, int], _Pending] = {}
        self._wake = asyncio.Event()
        self._empty = asyncio.Event()
        self._empty.set()

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, key: tuple[str, int]) -> bool:
        return key in self._pending

    def add(self, report: Report, origin: Stream | None) -> None:
        """Buffer a result and send it, on `origin` if that stream is still up."""
        entry = _Pending(report, None, 0.0, self._resend_min_s)
        self._pending[report.key] = entry
        self._empty.clear()
        self._send(entry, prefer=origin)

    def acknowledge(self, execution_id: str, fence: int) -> bool:
        """Forget a result (accepted, or refused as stale); False if it was not buffered."""
        entry = self._pending.pop((execution_id, fence), None)
        if not self._pending:
            self._empty.set()
        return entry is not None

    def stream_down(self, _stream: Stream) -> None:
        """A stream ended (it is no longer alive): what went out on it goes out again elsewhere."""
        self._wake.set()

    def stream_up(self, _stream: Stream) -> None:
        self._wake.set()

    async def flushed(self) -> None:
        """Return once every result has been acknowledged."""
        await self._empty.wait()

    async def run(self) -> None:
        """Resend until cancelled."""
        while True:
            self._wake.clear()
            now = self._clock()
            next_due = math.inf
            for entry in list(self._pending.values()):
                unsent = entry.sent_on is None or not entry.sent_on.alive
                if unsent or now >= entry.due:
                    self._send(entry, prefer=None)
                next_due = min(next_due, entry.due)
            timeout_s = None if next_due == math.inf else max(next_due - self._clock(), 0.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout_s)

    def _send(self, entry: _Pending, prefer: Stream | None) -> None:
        stream = self._router.route(entry.report.job_id, prefer=prefer)
        if stream is not None and stream.send_report(entry.report):
            if prefer is None:
                log.info(
                    "outbox.resent",
                    extra={"execution": entry.report.execution_id, "fence": entry.report.fence,
                           "node": stream.node_id},
                )  # fmt: skip
            entry.sent_on = stream
        else:
            entry.sent_on = None
        entry.due = self._clock() + entry.delay_s
        entry.delay_s = min(entry.delay_s * 2, self._resend_max_s)
