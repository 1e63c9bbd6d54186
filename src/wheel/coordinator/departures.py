"""Departures: the nodes that left the cluster in the last hour, and who took their partitions.

    /wheel/<cluster>/departed/<node>/<lease hex>
        {"node", "lease", "state": "lost" | "left", "gone_at", "address",
         "held": [partition, ...], "taken": {"<partition>": "<taker>"}}

A node's registration lives under its session's lease, so a killed node's key
simply goes, and with it every trace of the node. The contract here: for an
hour after, `departed/<node>/<lease>` says when it went, whether it stopped
cleanly (`left`) or was lost (`lost`), the partitions it held and which node
took each. The record has a 1 h lease of its own; one node's id may have
several records, one per session (the lease in the key).

Who writes what:

- A node stopping cleanly writes its own record, `left`, before it deletes its
  registration (`Ownership.stop`); so whoever sees the key go finds it there.
- Every other node watches `nodes/` (`Takeovers.nodes_seen`) and, when a
  registration goes, creates a `lost` record if none is there: a transaction
  that creates only an absent key, so N survivors make one record.
- Whoever acquires a partition whose last holder's session is gone adds itself
  as the taker with a compare-and-set on the record's mod revision
  (`Etcd.put_if_modified_at`): takers of one node's partitions never clobber
  each other, and a taker that comes before the record creates it. A taker
  that never saw the partition's last key (its watch broke and it listed again
  after the key went) looks for a departure of the last `TAKEOVER_WINDOW_S`
  that held the partition and has no taker for it.

The writes run in the background, batched per departed session (one
read and one transaction for all the partitions a node took from it): a node
taking over partitions has better things to wait for. They are a record, not
a fence: losing one to an etcd outage costs a line in `wheel nodes`, nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from wheel.coordinator.etcd import Etcd, KeyValue
from wheel.coordinator.layout import Layout, decode, encode
from wheel.errors import CoordinatorError

log = logging.getLogger(__name__)

DEPARTED_TTL_S = 3600
"""How long a departure is shown: the record's own lease."""
LOST = "lost"
"""Its session's lease ran out or was revoked by its successor: killed, frozen, cut off."""
LEFT = "left"
"""It stopped cleanly and handed its partitions over."""
CAS_TRIES = 20
"""Compare-and-set attempts per batch; each loses only to another writer's success."""
TAKEOVER_WINDOW_S = 120.0
"""A partition taken with no holder seen before is matched to a departure this recent that
held it (a mirror that relisted after the holder went never saw its key)."""

_UNREADABLE = (ValueError, KeyError, TypeError, json.JSONDecodeError)


@dataclass(frozen=True, slots=True)
class Departure:
    node_id: str
    lease: int
    """The session it went with (a restarted node has a new one)."""
    state: str
    """LOST or LEFT."""
    gone_at: datetime
    address: str = ""
    held: tuple[int, ...] = ()
    """The partitions it held when it went, as far as the survivors saw."""
    taken: Mapping[int, str] = field(default_factory=dict)
    """Partition -> the node that took it over."""

    def document(self) -> dict[str, object]:
        return {
            "node": self.node_id,
            "lease": f"{self.lease:x}",
            "state": self.state,
            "gone_at": self.gone_at.isoformat(),
            "address": self.address,
            "held": sorted(set(self.held) | set(self.taken)),
            "taken": {str(p): node for p, node in sorted(self.taken.items())},
        }

    @classmethod
    def from_kv(cls, kv: KeyValue) -> Departure:
        doc = decode(kv.value)
        gone_at = datetime.fromisoformat(str(doc["gone_at"]))
        return cls(
            node_id=str(doc["node"]),
            lease=int(str(doc.get("lease", "0")), 16),
            state=LEFT if doc.get("state") == LEFT else LOST,
            gone_at=gone_at if gone_at.tzinfo else gone_at.replace(tzinfo=UTC),
            address=str(doc.get("address", "")),
            held=tuple(sorted(int(p) for p in doc.get("held", ()))),
            taken={int(p): str(node) for p, node in dict(doc.get("taken", {})).items()},
        )


def departed_key(layout: Layout, node_id: str, lease: int) -> str:
    return f"{layout.departed}{node_id}/{lease:x}"


async def departures(etcd: Etcd, layout: Layout) -> list[Departure]:
    """Every departure still recorded, the latest first; an unreadable record is skipped."""
    kvs, _ = await etcd.get_prefix(layout.departed)
    found = []
    for kv in kvs:
        try:
            found.append(Departure.from_kv(kv))
        except _UNREADABLE:
            log.warning("departures.unreadable", extra={"key": kv.key[:200]})
    return sorted(found, key=lambda d: (d.gone_at, d.node_id), reverse=True)


async def record(etcd: Etcd, layout: Layout, departure: Departure) -> bool:
    """Create the departure's record unless one is there (2-3 round trips); True if this
    call wrote it."""
    key = departed_key(layout, departure.node_id, departure.lease)
    if await etcd.get(key) is not None:
        return False
    lease = await etcd.grant(DEPARTED_TTL_S)
    if await etcd.put_if_modified_at(key, encode(departure.document()), 0, lease=lease):
        return True
    await etcd.revoke(lease)  # another survivor wrote it first
    return False


async def add_takers(
    etcd: Etcd, layout: Layout, node_id: str, lease: int, taken: Mapping[int, str]
) -> None:
    """Add `taken` (partition -> taker) to the record of `node_id`'s session `lease`,
    creating it (lost) if nobody has yet: a read and a compare-and-set, again on a race."""
    key = departed_key(layout, node_id, lease)
    for _ in range(CAS_TRIES):
        kv = await etcd.get(key)
        if kv is None:
            fresh = Departure(node_id, lease, LOST, datetime.now(UTC), taken=dict(taken))
            if await record(etcd, layout, fresh):
                return
            continue
        try:
            known = Departure.from_kv(kv)
        except _UNREADABLE:
            log.warning("departures.unreadable", extra={"key": key[:200]})
            return
        merged = {**known.taken, **taken}
        if merged == dict(known.taken):
            return
        document = Departure(
            known.node_id, known.lease, known.state, known.gone_at, known.address,
            known.held, merged,
        ).document()  # fmt: skip
        if await etcd.put_if_modified_at(key, encode(document), kv.mod_revision, lease=kv.lease):
            return
    raise CoordinatorError(f"{key}: {CAS_TRIES} compare-and-set attempts lost to other writers")


@dataclass(frozen=True, slots=True)
class _Session:
    node_id: str
    lease: int


class Takeovers:
    """One node's part in the record (module doc): it is told what the node's mirrors of
    `nodes/` and `partitions/` show and what the node acquires, and writes the records in
    a task of its own. Not thread-safe; call from the event loop."""

    def __init__(
        self,
        etcd: Etcd,
        layout: Layout,
        node_id: str,
        lease: int,
        *,
        on_lost: Callable[[Departure], None] | None = None,
    ) -> None:
        """`on_lost` hears each loss this node records (one node records each loss)."""
        self._etcd = etcd
        self._on_lost = on_lost
        self.recorded_lost = 0
        """How many lost nodes this node recorded."""
        self._layout = layout
        self.node_id = node_id
        self._own = _Session(node_id, lease)
        self._live: dict[_Session, str] | None = None
        """Each registered session and its address, as last seen (None before the first)."""
        self._last_holder: dict[int, _Session] = {}
        """Each partition's last holder seen other than this node, kept after its key goes."""
        self._gone: dict[_Session, Departure] = {}
        self._taken: dict[_Session, dict[int, str]] = {}
        self._unknown: set[int] = set()
        """Partitions taken whose last holder this node never saw."""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.idle = asyncio.Event()
        """Set while nothing is waiting to be written."""
        self.idle.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"takeovers {self.node_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def nodes_seen(self, items: Mapping[str, KeyValue]) -> None:
        """The registrations now: a session seen before and gone now departed."""
        live: dict[_Session, str] = {}
        for key, kv in items.items():
            node_id = key.removeprefix(self._layout.nodes)
            try:
                address = str(decode(kv.value).get("address", ""))
            except _UNREADABLE:
                address = ""
            live[_Session(node_id, kv.lease)] = address
        before, self._live = self._live, live
        if before is None:
            return
        now = datetime.now(UTC)
        for session in before.keys() - live.keys():
            if session == self._own or session in self._gone:
                continue
            held = tuple(p for p, s in self._last_holder.items() if s == session)
            self._gone[session] = Departure(
                session.node_id, session.lease, LOST, now, before[session], held
            )
            self._poke()

    def partitions_seen(self, holders: Iterable[tuple[int, str, int]]) -> None:
        """(partition, node, lease) of every partition key now."""
        for partition, node_id, lease in holders:
            session = _Session(node_id, lease)
            if session != self._own:  # its own creates come back before `acquired` is told
                self._last_holder[partition] = session

    def acquired(self, partition: int) -> None:
        """This node took `partition`: if its last holder was another node, that node may
        have departed (checked before anything is written)."""
        last = self._last_holder.get(partition)
        if last == self._own:
            return
        if last is None:
            self._unknown.add(partition)
        else:
            self._taken.setdefault(last, {})[partition] = self.node_id
        self._poke()

    async def left(self, address: str, held: Iterable[int]) -> None:
        """Record this node's own clean exit (before it deletes its registration)."""
        departure = Departure(
            self.node_id, self._own.lease, LEFT, datetime.now(UTC), address, tuple(held)
        )
        await record(self._etcd, self._layout, departure)

    def _poke(self) -> None:
        self.idle.clear()
        self._wake.set()

    async def _run(self) -> None:
        delay = 0.1
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._write()
                delay = 0.1
            except CoordinatorError as exc:
                log.warning("departures.write_failed", extra={"node": self.node_id,
                                                              "error": str(exc)})  # fmt: skip
                await asyncio.sleep(delay)  # backoff while etcd is away; then again
                delay = min(delay * 2, 5.0)
                self._wake.set()
                continue
            if not self._wake.is_set():
                self.idle.set()

    async def _write(self) -> None:
        while self._gone:
            session, departure = next(iter(self._gone.items()))
            wrote = await record(self._etcd, self._layout, departure)
            del self._gone[session]
            if wrote:
                self.recorded_lost += 1
                if self._on_lost is not None:
                    self._on_lost(departure)
        while self._taken:
            session = next(iter(self._taken))
            taken = self._taken.pop(session)
            try:
                if not await self._still_registered(session):
                    await add_takers(
                        self._etcd, self._layout, session.node_id, session.lease, taken
                    )
                else:
                    # A hand-over: this node holds them now, so that node's later departure
                    # does not list them as held (with no taker).
                    for partition in taken:
                        if self._last_holder.get(partition) == session:
                            self._last_holder[partition] = self._own
            except BaseException:
                self._taken[session] = {**taken, **self._taken.get(session, {})}
                raise
        if self._unknown:
            await self._match_unknown()

    async def _match_unknown(self) -> None:
        """Find the departed holder of each partition taken without a holder seen (one read
        of `departed/`): the latest recent departure that held it and has no taker for it."""
        unknown, self._unknown = self._unknown, set()
        try:
            recent = [
                d for d in await departures(self._etcd, self._layout)
                if (datetime.now(UTC) - d.gone_at).total_seconds() <= TAKEOVER_WINDOW_S
                and _Session(d.node_id, d.lease) != self._own
            ]  # fmt: skip
        except BaseException:
            self._unknown |= unknown
            raise
        matched: dict[_Session, dict[int, str]] = {}
        for partition in sorted(unknown):
            departure = next((d for d in recent if partition in d.held
                              and partition not in d.taken), None)  # fmt: skip
            if departure is not None:
                session = _Session(departure.node_id, departure.lease)
                matched.setdefault(session, {})[partition] = self.node_id
        for session, taken in matched.items():  # no registration check: its session is gone
            await add_takers(self._etcd, self._layout, session.node_id, session.lease, taken)

    async def _still_registered(self, session: _Session) -> bool:
        """A hand-over between live nodes (a rebalance) is no departure."""
        kv = await self._etcd.get(self._layout.node(session.node_id))
        return kv is not None and kv.lease == session.lease
