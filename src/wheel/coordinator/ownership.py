"""Partition ownership: each node takes its share (`assignment`), under its session's lease.

The contract: a node calls `on_acquired(partition, epoch)` only after it
created `partitions/<nnnn>` under its own lease (the key's create revision is
the epoch) and `on_released(partition)` before it deletes a key it no longer
should hold — or at once when its session is lost, no later than the lease
could have expired. A partition key is created only if absent, so no two
nodes hold one at a time; a node that should own a partition still held by
another waits for the holder to hand it over (or for its lease to expire).

Reconciliation runs on every change of the node set or the partition keys:
desired = this node's part of `owners(live nodes and itself, who holds what)`,
release what is held and not desired, acquire what is desired and free. The
assignment is sticky: a leaving node's partitions move, a joining node is
given a quota's worth of what the others have held longest, and nothing else
moves (so no partition moves twice across one restart of a node).

Hand-overs are timed so that partitions wait unowned as little as they can:
a stopping node leaves the live set before it releases anything, so each of
its partitions is taken as soon as its key goes; a node past its quota gives
up one partition at a time to each taker, the next once the last was taken,
so it fires them until its taker is ready; and a node acquires the partitions
that have gone unowned longest first.

Time is read from an injected `Clock` and waited on through an `Alarm` (the
system's and the running loop's by default; a test's `ManualClock` is both):
the retry backoff, the wait for a holder to hand over, and "free since".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime

from wheel.coordinator import assignment
from wheel.coordinator.assignment import Holder
from wheel.coordinator.departures import Departure, Takeovers
from wheel.coordinator.etcd import Etcd, KeyValue
from wheel.coordinator.layout import DEFAULT_PARTITIONS, Layout, decode, encode
from wheel.coordinator.mirror import PrefixMirror
from wheel.coordinator.session import Session
from wheel.errors import CoordinatorError, WheelError
from wheel.model.ids import PartitionId
from wheel.timingwheel import Alarm, AlarmHandle, Clock, LoopAlarm, SystemClock

log = logging.getLogger(__name__)

RETRY_MIN_S = 0.1
RETRY_MAX_S = 2.0
REFUSED_BACKOFF_S = 1.0

Acquired = Callable[[PartitionId, int], Awaitable[bool]]
"""Called with (partition, epoch) after acquisition; False refuses it (it is released)."""
Released = Callable[[PartitionId], Awaitable[None]]


async def partition_count(etcd: Etcd, layout: Layout, default: int = DEFAULT_PARTITIONS) -> int:
    """The cluster's partition count, fixed by whichever node wrote `config` first."""
    existing = await etcd.get(layout.config)
    if existing is None:
        await etcd.create(layout.config, encode({"partitions": default}), lease=0)
        existing = await etcd.get(layout.config)
    assert existing is not None
    return int(decode(existing.value)["partitions"])


class Ownership:
    def __init__(
        self,
        etcd: Etcd,
        layout: Layout,
        node_id: str,
        *,
        partitions: int,
        session: Session,
        on_acquired: Acquired,
        on_released: Released,
        address: str = "",
        clock: Clock | None = None,
        alarm: Alarm | None = None,
        on_lost: Callable[[Departure], None] | None = None,
    ) -> None:
        """`clock` is read for every wait and stamp, `alarm` wakes the next reconciliation
        (both default to the system's and the running loop's); `on_lost` hears each lost
        node this one records (`Takeovers`)."""
        self._etcd = etcd
        self._clock: Clock = clock or SystemClock()
        self._alarm = alarm
        self._layout = layout
        self.node_id = node_id
        self._count = partitions
        self._session = session
        self._on_acquired = on_acquired
        self._on_released = on_released
        self._address = address
        self.held: dict[PartitionId, int] = {}
        """Partitions this node owns now, with their epochs."""
        self.takeovers = Takeovers(etcd, layout, node_id, session.lease_id, on_lost=on_lost)
        """Records the nodes that go and the partitions this one takes from them."""
        self._nodes = PrefixMirror(etcd, layout.nodes, on_change=self._nodes_changed)
        self._keys = PrefixMirror(etcd, layout.partitions, on_change=self._keys_changed)
        self._wake = asyncio.Event()
        self._refused: dict[PartitionId, float] = {}
        self._task: asyncio.Task[None] | None = None
        self.settled = asyncio.Event()
        """Set whenever a reconciliation leaves nothing to do and nothing given to this node
        is still on its way from another (`_settle`); replaced on the next change."""
        self.healthy = False
        """True while the last reconciliation succeeded: health reports NOT_SERVING otherwise."""
        self.failures = 0
        """Reconciliations that failed in a row."""
        self._unreadable: set[str] = set()
        self._registered = 0
        """The revision of the put that registered `nodes/<id>` (its create revision, unless
        the key was there before: then it is never deleted but with the lease)."""
        self._awaited_since: float | None = None
        """Since when another node has held something this node is given (monotonic)."""
        self._settle_check: AlarmHandle | None = None
        self._given_up: dict[PartitionId, tuple[int, str]] = {}
        """Partitions this node released past its quota that nobody holds yet: the epoch it
        released, and the node meant to take it."""
        self._free_since: dict[PartitionId, float] = {}
        """When this node first saw each partition without a key (monotonic)."""
        self._names: dict[str, tuple[int, str]] = {}
        """Each partition key's holder as last decoded, by key: (mod revision, node). At most
        one entry per partition: `_holders` passes no other key."""

    async def start(self) -> None:
        self._registered = await self._etcd.put(
            self._layout.node(self.node_id),
            encode(
                {
                    "node": self.node_id,
                    "address": self._address,
                    "since": self._now().isoformat(),
                    "assignment": assignment.STICKY,
                }
            ),
            lease=self._session.lease_id,
        )
        self.takeovers.start()
        await self._nodes.start()
        await self._keys.start()
        self._task = asyncio.create_task(self._run(), name=f"ownership {self.node_id}")

    async def stop(self, *, hand_over: bool = True) -> None:
        """Stop reconciling and let go of every partition.

        With `hand_over`, the node first leaves the live set (`nodes/<id>` is
        deleted), so the others count its partitions as theirs to take; then each
        is released and its key deleted, and its next owner takes it at once, not
        after the last. Without (the session is lost or the node is going away
        uncleanly), each is released and its key left to expire.
        """
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.healthy = False
        try:
            if hand_over:
                with contextlib.suppress(CoordinatorError):  # else it is recorded as lost
                    await self.takeovers.left(self._address, self.held)
                with contextlib.suppress(CoordinatorError):  # else it goes with the lease
                    await self._etcd.delete_if_created_at(
                        self._layout.node(self.node_id), self._registered
                    )
                for partition in list(self.held):
                    try:
                        await self._release(partition)
                    except CoordinatorError:
                        continue  # released here; its key goes when the lease does
            else:
                await self._lose_everything()
        finally:
            await self._nodes.stop()
            await self._keys.stop()
            await self.takeovers.stop()

    def _nodes_changed(self, items: Mapping[str, KeyValue]) -> None:
        self.takeovers.nodes_seen(items)
        self._poke()

    def _keys_changed(self, items: Mapping[str, KeyValue]) -> None:
        self.takeovers.partitions_seen(
            (partition, self._name_of(kv), kv.lease) for partition, kv in self._holders().items()
        )
        self._poke()

    def _poke(self) -> None:
        self.settled = asyncio.Event() if self.settled.is_set() else self.settled
        self._wake.set()

    async def _run(self) -> None:
        lost = asyncio.create_task(self._session.lost.wait())
        delay = RETRY_MIN_S
        try:
            while True:
                if self._session.lost.is_set():
                    self.healthy = False
                    await self._lose_everything()
                    return
                self._wake.clear()
                try:
                    await self._reconcile()
                    delay = RETRY_MIN_S
                    self.healthy, self.failures = True, 0
                except Exception as exc:  # etcd, or a callback's store: retry, never give up
                    self.healthy = False
                    self.failures += 1
                    extra = {"node": self.node_id, "error": repr(exc), "failures": self.failures}
                    if isinstance(exc, WheelError):
                        log.warning("ownership.reconcile_failed", extra=extra)
                    else:
                        log.exception("ownership.reconcile_failed", extra=extra)
                    self._wake_later(delay)
                    delay = min(delay * 2, RETRY_MAX_S)
                if not self._wake.is_set():
                    self._settle()
                wake = asyncio.create_task(self._wake.wait())
                await asyncio.wait({wake, lost}, return_when=asyncio.FIRST_COMPLETED)
                wake.cancel()
        finally:
            lost.cancel()

    def _settle(self) -> None:
        """Set `settled`, unless another node is still handing over what this one is given:
        a returning node is ready once it holds its share, not when it has asked for it.
        Waited for a session TTL at most: a holder gone silent has let go by then."""
        if self._awaited_since is not None:
            left_s = self._awaited_since + self._session.ttl_s - self._monotonic_s()
            if left_s > 0:
                if self._settle_check is None:  # one is enough: it reconciles, then asks again
                    self._settle_check = self._later(left_s, self._check_settled)
                return
        self.settled.set()

    def _check_settled(self) -> None:
        self._settle_check = None
        self._wake.set()

    def _wake_later(self, delay_s: float) -> None:
        self._later(delay_s, self._wake.set)

    def _later(self, delay_s: float, callback: Callable[[], None]) -> AlarmHandle:
        if self._alarm is None:  # the running loop's, once there is one
            self._alarm = LoopAlarm(asyncio.get_running_loop())
        return self._alarm.call_later(math.ceil(delay_s * 1000), callback)

    def _monotonic_s(self) -> float:
        return self._clock.monotonic_ms() / 1000

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.wall_ms() / 1000, UTC)

    async def _reconcile(self) -> None:
        holders = self._holders()
        claims = self._claims(holders)
        given = assignment.owners(self._live(), claims, self._count)
        desired = {partition for partition, node in given.items() if node == self.node_id}
        if not any(p in holders and claims[p].node != self.node_id for p in desired):
            self._awaited_since = None
        elif self._awaited_since is None:
            self._awaited_since = self._monotonic_s()
        # Past its quota, a node gives up one partition at a time to each taker, the next
        # once the last has a new owner: each is fired here while its taker loads the one
        # before, rather than waiting unowned in the taker's queue.
        self._given_up = {
            p: (epoch, taker)
            for p, (epoch, taker) in self._given_up.items()
            if p not in self.held  # a release that failed is tried again below
            and (p not in holders or holders[p].create_revision == epoch)  # delete not seen yet
        }
        waiting = {taker for _, taker in self._given_up.values()}
        for partition in sorted(set(self.held) - desired):
            if given[partition] not in waiting:
                waiting.add(given[partition])
                self._given_up[partition] = (self.held[partition], given[partition])
                await self._release(partition)
        holders = self._holders()
        for partition, kv in sorted(holders.items()):
            # A key under our lease that we do not count as held: a create whose reply was
            # lost, or a release whose delete failed. Adopt it if wanted, else delete it.
            if kv.lease == self._session.lease_id and partition not in self.held:
                if partition in desired:
                    await self._acquired(partition, kv.create_revision)
                else:
                    await self._etcd.delete_if_created_at(kv.key, kv.create_revision)
        now = self._monotonic_s()
        self._free_since = {
            PartitionId(p): self._free_since.get(PartitionId(p), now)
            for p in range(self._count)
            if p not in holders
        }
        # Longest unowned first: a returning node given partitions free since their owner
        # stopped and others just given up loads the ones nobody has fired for longest first.
        wanted = sorted(desired - set(self.held), key=lambda p: (self._free_since.get(p, now), p))
        for partition in wanted:
            if partition in holders or self._refused.get(partition, 0.0) > now:
                continue  # another node still holds it (its delete will wake us), or backing off
            epoch = await self._etcd.create(
                self._layout.partition(partition),
                encode({"node": self.node_id, "since": self._now().isoformat()}),
                lease=self._session.lease_id,
            )
            if epoch is not None:
                await self._acquired(partition, epoch)
                if partition in self.held:
                    self.takeovers.acquired(partition)
            if self._wake.is_set():
                return  # the nodes or keys changed while it loaded: decide again on what is now

    def _holders(self) -> dict[PartitionId, KeyValue]:
        """The partition keys by partition; a key that names none is logged and left."""
        holders: dict[PartitionId, KeyValue] = {}
        for key, kv in self._keys.items.items():
            try:
                partition = self._layout.partition_of(key)
            except ValueError:
                partition = PartitionId(-1)
            if not 0 <= partition < self._count:
                if key not in self._unreadable:
                    self._unreadable.add(key)
                    log.warning(
                        "ownership.unreadable_key", extra={"node": self.node_id, "key": key[:200]}
                    )
                continue
            holders[partition] = kv
        return holders

    def _live(self) -> dict[str, bool]:
        """The live nodes, this one among them, and whether each assigns sticky (a node
        of an older version does not say so: module `assignment`)."""
        live = {self.node_id: True}
        for key, kv in self._nodes.items.items():
            node = key.removeprefix(self._layout.nodes)
            if node != self.node_id:
                try:
                    live[node] = decode(kv.value).get("assignment") == assignment.STICKY
                except ValueError:
                    live[node] = False  # unreadable: assume the older rule, which all share
        return live

    def _claims(self, holders: dict[PartitionId, KeyValue]) -> dict[PartitionId, Holder]:
        """Who holds each partition, as the keys say, and what this node holds, as it knows
        (its own creates may not have come back through the watch yet)."""
        claims = {p: Holder(self._name_of(kv), kv.create_revision) for p, kv in holders.items()}
        for partition, epoch in self.held.items():
            claims[partition] = Holder(self.node_id, epoch)
        return claims

    def _name_of(self, kv: KeyValue) -> str:
        """The node a partition key names ("" when it names none: held, but by nobody live)."""
        known = self._names.get(kv.key)
        if known is not None and known[0] == kv.mod_revision:
            return known[1]
        try:
            node = str(decode(kv.value)["node"])
        except (ValueError, KeyError, TypeError):
            node = ""
        self._names[kv.key] = (kv.mod_revision, node)
        return node

    async def _acquired(self, partition: PartitionId, epoch: int) -> None:
        """Tell the node; if it fails, the partition was never acquired (key freed, retried)."""
        self.held[partition] = epoch
        try:
            accepted = await self._on_acquired(partition, epoch)
        except Exception:
            del self.held[partition]
            self._refused[partition] = self._monotonic_s() + RETRY_MIN_S
            await self._etcd.delete_if_created_at(self._layout.partition(partition), epoch)
            raise
        if not accepted:
            self._refused[partition] = self._monotonic_s() + REFUSED_BACKOFF_S
            self._wake_later(REFUSED_BACKOFF_S)
            await self._release(partition)

    async def _release(self, partition: PartitionId) -> None:
        """Stop firing (the callback), forget it, then free the key for the next owner.

        A failed delete leaves a key under our lease that we do not hold: the next
        reconciliation deletes it (or the lease's end does).
        """
        epoch = self.held[partition]
        await self._on_released(partition)
        del self.held[partition]
        await self._etcd.delete_if_created_at(self._layout.partition(partition), epoch)

    async def _lose_everything(self) -> None:
        if self.held:
            log.warning("ownership.let_go", extra={"node": self.node_id, "held": len(self.held)})
        for partition in list(self.held):
            self.held.pop(partition)
            await self._on_released(partition)
