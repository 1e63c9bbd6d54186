"""Registration: this executor's entry in etcd, kept for as long as the process runs.

`run()` opens a session, writes `executors/<id>` under its lease and waits;
when the session is lost (etcd silent past its deadline, the lease expired
or revoked) it starts over with a new session, backing off while etcd stays
away. Cancelling revokes the lease, so the entry goes at once.
"""

from __future__ import annotations

import asyncio
import logging

from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.registry import ExecutorInfo, register_executor
from wheel.coordinator.session import Session
from wheel.errors import CoordinatorError

log = logging.getLogger(__name__)

RETRY_MIN_S = 0.1
RETRY_MAX_S = 5.0


class Registration:
    def __init__(self, etcd: Etcd, layout: Layout, info: ExecutorInfo, *, ttl_s: int) -> None:
        self._etcd = etcd
        self._layout = layout
        self.info = info
        self._ttl_s = ttl_s
        self.sessions = 0
        """Sessions the entry was written under (1 + the times it re-registered)."""
        self.registered = asyncio.Event()
        """Set while the entry is written under a live session."""

    async def run(self) -> None:
        delay_s = RETRY_MIN_S
        context = {"executor": self.info.executor_id}
        while True:
            session: Session | None = None
            try:
                session = await Session.open(self._etcd, ttl_s=self._ttl_s)
                await register_executor(self._etcd, self._layout, self.info, session)
            except CoordinatorError as exc:
                log.warning("registration.failed", extra={**context, "error": str(exc)})
                if session is not None:
                    await session.close()
                await asyncio.sleep(delay_s)  # backoff while etcd is away
                delay_s = min(delay_s * 2, RETRY_MAX_S)
                continue
            except asyncio.CancelledError:
                # Stopped while registering: the entry may be written already.
                if session is not None:
                    await session.close()
                raise
            delay_s = RETRY_MIN_S
            self.sessions += 1
            self.registered.set()
            log.info("registration.registered", extra={**context, "lease": session.lease_id})
            try:
                await session.lost.wait()
                log.warning(
                    "registration.session_lost", extra={**context, "lease": session.lease_id}
                )
            finally:
                self.registered.clear()
                await session.close()
