"""A scheduler node's life in the cluster: session, registration, ownership — and again.

The contract: `run()` keeps the node a member until cancelled. It opens a
session, registers the node and reconciles ownership; when the session is
lost (etcd silent past the deadline, the lease expired) every partition has
already been released by then, and it starts over with a new session,
backing off while etcd stays away. Cancelling hands every partition over.

Before registering, it retires its previous session: a node killed outright
(or any node across an etcd restart, which renews every lease) leaves
`nodes/<id>` and its partitions under a lease nobody keeps alive, for up to
a TTL. Once that lease is seen counting down (`kept_alive`) it is revoked,
so the node takes its share at once rather than a TTL later. A lease that is
kept alive belongs to another live process with this id: it is left alone,
and said loudly (fencing keeps the two apart).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from wheel.coordinator.departures import LOST, Departure, record
from wheel.coordinator.etcd import Etcd, KeyValue
from wheel.coordinator.layout import DEFAULT_PARTITIONS, Layout, decode
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
        on_lost: Callable[[Departure], None] | None = None,
    ) -> None:
        """`on_lost` hears each lost node this one records, its own previous session too."""
        self._on_lost = on_lost
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
        self.joining = "opening a session"
        """What it is doing until it has joined (what readiness says)."""

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
        await self._retire_previous(session)
        self.joining = "registering"
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
            on_lost=self._on_lost,
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

    async def _retire_previous(self, session: Session) -> None:
        """Revoke this node id's previous lease if nobody keeps it alive (module doc)."""
        kv = await self._etcd.get(self._layout.node(self.node_id))
        if kv is None or kv.lease in (0, session.lease_id):
            return
        context = {"node": self.node_id, "lease": f"{kv.lease:x}"}
        self.joining = f"retiring its previous session (lease {kv.lease:x})"
        if await kept_alive(self._etcd, kv.lease):
            log.error(
                "membership.node_id_in_use",
                extra={**context, "action": "another live process registered this node id:"
                       " its partitions stay with it until it stops; node ids must be unique"},
            )  # fmt: skip
            return
        await self._record_lost(kv)
        await self._etcd.revoke(kv.lease)  # its partition keys go with it
        log.info("membership.previous_session_revoked", extra=context)

    async def _record_lost(self, registration: KeyValue) -> None:
        """Record the previous session as lost (`departures`): with no other node up,
        nobody else saw it go."""
        kvs, _ = await self._etcd.get_prefix(self._layout.partitions)
        held = []
        for kv in kvs:
            with contextlib.suppress(ValueError):
                if kv.lease == registration.lease:
                    held.append(self._layout.partition_of(kv.key))
        try:
            address = str(decode(registration.value).get("address", ""))
        except (ValueError, TypeError):
            address = ""
        departure = Departure(
            self.node_id, registration.lease, LOST, datetime.now(UTC), address, tuple(held)
        )
        if await record(self._etcd, self._layout, departure) and self._on_lost is not None:
            self._on_lost(departure)


KEEP_ALIVE_SLACK_S = 1.5
"""A live session refreshes its lease every third of its TTL (`Session`), so its time to
live never falls below 2/3 of its TTL; less this, for etcd's whole seconds and a late
keep-alive."""


async def kept_alive(
    etcd: Etcd,
    lease_id: int,
    *,
    poll_s: float = 0.25,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> bool:
    """Whether someone keeps the lease alive.

    A live session never lets its time to live fall below the floor (2/3 of its TTL, less
    the slack); a lease nobody keeps alive counts down past it. So: not kept alive once it
    is below the floor; kept alive if it is still above when a lease counting down from
    the first reading would have passed it. That takes at most TTL/3 + 2.5 s, and no time
    for a lease that has missed keep-alives already.
    """
    first = await etcd.time_to_live(lease_id)
    floor_s = first.granted_s * 2 / 3 - KEEP_ALIVE_SLACK_S
    decide_at = clock() + max(0.0, first.remaining_s - floor_s) + 1.0  # + etcd's rounding
    remaining = first.remaining_s
    while remaining > 0 and remaining >= floor_s:
        if clock() >= decide_at:
            return True
        await sleep(poll_s)  # a lease's time to live changes silently: there is no event
        remaining = (await etcd.time_to_live(lease_id)).remaining_s
    return False
