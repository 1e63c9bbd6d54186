"""Session: a lease kept alive for the lifetime of a node (etcd's concurrency.Session).

The contract: while `alive()` holds, the lease exists in etcd. A keep-alive
goes out every TTL/3; each success moves the local deadline to the instant
the keep-alive was *sent* plus the TTL etcd granted — never later than etcd's
own expiry, which counts from when it *received* it. When no keep-alive
succeeds by the deadline (etcd gone silent, partitioned, or the lease
already expired), `lost` is set at the deadline, not after: whoever fences
work on the session stops then. The deadline is on the monotonic clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from wheel.coordinator.etcd import Etcd
from wheel.errors import CoordinatorError

log = logging.getLogger(__name__)


class Session:
    def __init__(
        self, etcd: Etcd, *, ttl_s: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if ttl_s < 1:
            raise ValueError("ttl_s must be at least 1")
        self._etcd = etcd
        self._ttl_s = ttl_s
        self._clock = clock
        self.lease_id = 0
        self.deadline = 0.0
        self.lost = asyncio.Event()
        self.refreshed = asyncio.Event()
        """Set after each successful keep-alive, then replaced: await the next one."""
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    async def open(
        cls, etcd: Etcd, *, ttl_s: int, clock: Callable[[], float] = time.monotonic
    ) -> Session:
        """Grant a lease and start keeping it alive."""
        session = cls(etcd, ttl_s=ttl_s, clock=clock)
        sent = session._clock()
        session.lease_id = await etcd.grant(ttl_s)
        session.deadline = sent + ttl_s
        session._task = asyncio.create_task(session._keep_alive(), name="session keep-alive")
        return session

    @property
    def ttl_s(self) -> int:
        """The TTL asked for: a lease nobody keeps alive is gone this long after."""
        return self._ttl_s

    def alive(self) -> bool:
        return not self.lost.is_set() and self._clock() < self.deadline

    async def close(self) -> None:
        """Stop keeping the lease alive and revoke it (its keys go at once).

        The lease is revoked even when the local deadline has passed: the
        deadline is conservative (it counts from when a keep-alive was sent), so
        under load etcd may still hold a lease this side already gave up on, and
        the keys under it must not outlive a clean exit by a TTL.
        """
        if self._closed:
            return
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.lost.set()
        if self.lease_id:
            with contextlib.suppress(CoordinatorError):  # gone already, or etcd away: it expires
                await self._etcd.revoke(self.lease_id)

    async def _keep_alive(self) -> None:
        try:
            await self._keep_alive_until_lost()
        finally:
            self.lost.set()  # whatever ended the loop, nobody may trust the lease any more

    async def _keep_alive_until_lost(self) -> None:
        interval = self._ttl_s / 3
        while True:
            remaining = self.deadline - self._clock()
            if remaining <= 0:
                break
            await asyncio.sleep(min(interval, remaining))  # the keep-alive schedule itself
            sent = self._clock()
            remaining = self.deadline - sent
            if remaining <= 0:
                break
            try:
                ttl = await asyncio.wait_for(self._etcd.keep_alive(self.lease_id), remaining)
            except (TimeoutError, CoordinatorError) as exc:
                log.warning(
                    "session.keep_alive_failed", extra={"lease": self.lease_id, "error": repr(exc)}
                )
                continue
            if ttl <= 0:
                log.warning("session.lease_expired", extra={"lease": self.lease_id})
                break
            self.deadline = sent + ttl
            self.refreshed.set()
            self.refreshed = asyncio.Event()
