"""A scheduler node's life in the cluster: session, registration, ownership — and again.

The contract: `run()` keeps the node a member until cancelled. It opens a
session, registers the node and reconciles ownership; when the session is
lost (etcd silent past the deadline, the lease expired) every partition has
already been released by then, and it starts over with a new session,
backing off while etcd stays away. Cancelling hands every partition over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import DEFAULT_PARTITIONS, Layout
from wheel.coordinator.ownership import Acquired, Ownership, Released, partition_count
from wheel.coordinator.session import Session
from wheel.errors import CoordinatorError

log = logging.getLogger(__name__)

RETRY_MIN_S = 0.1
RETRY_MAX_S = 5.0


class Membership:
    def __init__(
        self,
        etcd: Etcd,
        layout: Layout,
        node_id: str,
        *,
        ttl_s: int,
        on_acquired: Acquired,
        on_released: Released,
        address: str = "",
        default_partitions: int = DEFAULT_PARTITIONS,
    ) -> None:
        self._etcd = etcd
        self._layout = layout
        self.node_id = node_id
        self._ttl_s = ttl_s
        self._on_acquired = on_acquired
        self._on_released = on_released
        self._address = address
        self._default_partitions = default_partitions
        self.ownership: Ownership | None = None
        self.session: Session | None = None
        """The live session while a member: keys put under its lease go when the node does."""
        self.sessions = 0
        """How many sessions this node has opened (1 + the times it re-registered)."""
        self.joined = asyncio.Event()
        """Set once the node is registered and reconciling; cleared while it is not."""

    async def run(self) -> None:
        delay = RETRY_MIN_S
        while True:
            try:
                session = await Session.open(self._etcd, ttl_s=self._ttl_s)
            except CoordinatorError as exc:
                log.warning(
                    "membership.session_failed", extra={"node": self.node_id, "error": str(exc)}
                )
                await asyncio.sleep(delay)  # backoff while etcd is away
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            delay = RETRY_MIN_S
            self.sessions += 1
            self.session = session
            try:
                await self._member(session)
            except CoordinatorError as exc:
                log.warning("membership.lost", extra={"node": self.node_id, "error": str(exc)})
            finally:
                self.session = None
                self.joined.clear()
                # Revoked even when lost: etcd may still hold a lease this side gave up on
                # (an etcd restart renews every lease), and its keys would keep the
                # partitions from the next session until it expired.
                await session.close()

    async def _member(self, session: Session) -> None:
        count = await partition_count(self._etcd, self._layout, self._default_partitions)
        ownership = Ownership(
            self._etcd,
            self._layout,
            self.node_id,
            partitions=count,
            session=session,
            on_acquired=self._on_acquired,
            on_released=self._on_released,
            address=self._address,
        )
        self.ownership = ownership
        await ownership.start()
        self.joined.set()
        try:
            await session.lost.wait()
            await ownership.stop(hand_over=False)  # already released at the deadline
        except asyncio.CancelledError:
            # Cancelled means gone, whatever etcd says: a failed hand-over leaves the
            # keys to expire with the lease, and the cancellation goes on.
            with contextlib.suppress(CoordinatorError):
                await ownership.stop(hand_over=True)
            raise
