"""Ownership on a manual clock: when it retries, backs off and settles, with no waiting.

Its collaborators are stand-ins: an in-memory etcd (keys, revisions, create-if-absent,
guarded deletes and prefix watches, which the real mirrors follow) that can be made
unavailable, and a session that is only a lease id and a TTL. Ownership itself, its
mirrors and its takeovers are the real ones. The clock moves only when a test says so;
between moves the test lets the loop run until ownership has nothing left to do.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import cast

from wheel.coordinator.etcd import Change, Etcd, KeyValue
from wheel.coordinator.layout import Layout, encode
from wheel.coordinator.ownership import REFUSED_BACKOFF_S, RETRY_MAX_S, RETRY_MIN_S, Ownership
from wheel.coordinator.session import Session
from wheel.errors import CoordinatorUnavailable
from wheel.model.ids import PartitionId
from wheel.timingwheel import ManualClock

LAYOUT = Layout("c")
LEASE = 7
OTHER_LEASE = 9
TTL_S = 10


class _Etcd:
    """Keys and revisions in memory; the operations named in `failing` raise."""

    def __init__(self) -> None:
        self.kvs: dict[str, KeyValue] = {}
        self.revision = 1
        self.failing: set[str] = set()
        """Operations that fail as an unreachable etcd's would."""
        self.creates: list[str] = []
        self._watches: list[tuple[str, asyncio.Queue[Change]]] = []
        self._leases = 100

    def _check(self, operation: str = "") -> None:
        if operation in self.failing:
            raise CoordinatorUnavailable(f"etcd refused {operation} (the test's)")

    def _emit(self, change: Change) -> None:
        for prefix, queue in self._watches:
            if change.kv.key.startswith(prefix):
                queue.put_nowait(change)

    def _set(self, key: str, value: bytes, lease: int) -> int:
        self.revision += 1
        old = self.kvs.get(key)
        created = old.create_revision if old is not None else self.revision
        kv = self.kvs[key] = KeyValue(key, value, created, self.revision, lease)
        self._emit(Change(False, kv, self.revision))
        return self.revision

    def _delete(self, key: str) -> None:
        self.revision += 1
        kv = self.kvs.pop(key)
        self._emit(Change(True, KeyValue(key, b"", kv.create_revision, self.revision, 0),
                          self.revision))  # fmt: skip

    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        self._check()
        return [kv for key, kv in sorted(self.kvs.items()) if key.startswith(prefix)], self.revision

    async def get(self, key: str) -> KeyValue | None:
        self._check()
        return self.kvs.get(key)

    async def put(self, key: str, value: bytes, *, lease: int | None = None) -> int:
        self._check()
        return self._set(key, value, lease or 0)

    async def create(self, key: str, value: bytes, *, lease: int) -> int | None:
        self.creates.append(key)
        self._check("create")
        if key in self.kvs:
            return None
        return self._set(key, value, lease)

    async def put_if_modified_at(
        self, key: str, value: bytes, mod_revision: int, *, lease: int = 0
    ) -> bool:
        self._check()
        kv = self.kvs.get(key)
        if (kv.mod_revision if kv is not None else 0) != mod_revision:
            return False
        self._set(key, value, lease)
        return True

    async def delete_if_created_at(self, key: str, create_revision: int) -> bool:
        self._check()
        kv = self.kvs.get(key)
        if kv is None or kv.create_revision != create_revision:
            return False
        self._delete(key)
        return True

    async def grant(self, ttl_s: int) -> int:
        self._check()
        self._leases += 1
        return self._leases

    async def revoke(self, lease_id: int) -> None:
        self._check()

    async def watch_prefix(self, prefix: str, start_revision: int) -> AsyncIterator[Change]:
        queue: asyncio.Queue[Change] = asyncio.Queue()
        entry = (prefix, queue)
        self._watches.append(entry)
        try:
            while True:
                yield await queue.get()
        finally:
            self._watches.remove(entry)

    def hold(self, partition: int, node: str, lease: int = OTHER_LEASE) -> None:
        """Another node's key for `partition` (as if it created it)."""
        self._set(LAYOUT.partition(partition), encode({"node": node}), lease)

    def poke(self) -> None:
        """A change under `partitions/` that names no partition: it wakes every node."""
        self._set(LAYOUT.partitions + "not-a-partition", b"{}", 0)

    def let_go(self, partition: int) -> None:
        self._delete(LAYOUT.partition(partition))

    def register(self, node: str, lease: int = OTHER_LEASE) -> None:
        self._set(LAYOUT.node(node), encode({"node": node, "assignment": "sticky"}), lease)


@dataclass
class _Session:
    lease_id: int = LEASE
    ttl_s: int = TTL_S
    lost: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class _Node:
    """What the node is told: each acquisition asked (partition, at ms), and its answers."""

    clock: ManualClock
    answers: list[bool | Exception] = field(default_factory=list)
    asked: list[tuple[int, int]] = field(default_factory=list)
    released: list[int] = field(default_factory=list)

    async def acquired(self, partition: PartitionId, epoch: int) -> bool:
        self.asked.append((partition, self.clock.monotonic_ms()))
        answer = self.answers.pop(0) if self.answers else True
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def on_released(self, partition: PartitionId) -> None:
        self.released.append(partition)


async def _quiet() -> None:
    """Let the loop run what is ready until nothing is (no time passes: the clock is manual).
    Everything here is in memory, so a few hundred turns are far more than enough."""
    for _ in range(300):
        await asyncio.sleep(0)


@contextlib.asynccontextmanager
async def _owning(
    etcd: _Etcd, clock: ManualClock, node: _Node, partitions: int = 1
) -> AsyncIterator[Ownership]:
    ownership = Ownership(
        cast(Etcd, etcd), LAYOUT, "me", partitions=partitions,
        session=cast(Session, _Session()), on_acquired=node.acquired,
        on_released=node.on_released, clock=clock, alarm=clock,
    )  # fmt: skip
    await ownership.start()
    await _quiet()
    try:
        yield ownership
    finally:
        await ownership.stop(hand_over=False)


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


async def _advance(clock: ManualClock, ms: int) -> None:
    clock.advance(ms)
    await _quiet()


async def test_while_etcd_refuses_writes_it_retries_after_a_backoff_that_doubles_to_a_cap() -> None:
    clock, etcd = ManualClock(), _Etcd()
    etcd.failing = {"create"}
    node = _Node(clock)
    async with _owning(etcd, clock, node) as ownership:
        assert (ownership.healthy, ownership.failures) == (False, 1)
        waits = []
        for failures in range(2, 9):
            (due,) = clock.pending_alarms()
            waits.append(due - clock.monotonic_ms())
            await _advance(clock, waits[-1] - 1)
            assert ownership.failures == failures - 1, "not before its backoff"
            await _advance(clock, 1)
            assert ownership.failures == failures
        assert waits == [100, 200, 400, 800, 1600, 2000, 2000]
        assert (waits[0], waits[-1]) == (_ms(RETRY_MIN_S), _ms(RETRY_MAX_S))
        assert len(etcd.creates) == 8, "one try per wake-up, none in between"
        etcd.failing = set()
        (due,) = clock.pending_alarms()
        await _advance(clock, due - clock.monotonic_ms())
        assert (ownership.healthy, ownership.failures) == (True, 0), "back once etcd is"
        assert list(ownership.held) == [0]
        assert clock.pending_alarms() == [], "no retry is left armed"


async def test_a_refused_partition_is_asked_for_again_after_the_refusal_backoff() -> None:
    clock, etcd = ManualClock(), _Etcd()
    node = _Node(clock, answers=[False, False, True])
    async with _owning(etcd, clock, node) as ownership:
        assert node.asked == [(0, 0)]
        assert ownership.held == {}, "refused: released, its key deleted"
        assert LAYOUT.partition(0) not in etcd.kvs
        backoff_ms = _ms(REFUSED_BACKOFF_S)
        await _advance(clock, backoff_ms // 2)
        etcd.poke()
        await _advance(clock, backoff_ms - backoff_ms // 2 - 1)
        assert len(node.asked) == 1, "not before the backoff, though etcd woke it meanwhile"
        await _advance(clock, 1)
        assert node.asked == [(0, 0), (0, backoff_ms)]
        await _advance(clock, backoff_ms)
        assert node.asked[-1] == (0, 2 * backoff_ms)
        assert list(ownership.held) == [0]
        await _advance(clock, 10 * backoff_ms)
        assert len(node.asked) == 3, "held: never asked again"


async def test_a_failed_acquisition_is_retried_after_the_shortest_backoff() -> None:
    clock, etcd = ManualClock(), _Etcd()
    node = _Node(clock, answers=[RuntimeError("the store is away"), True])
    async with _owning(etcd, clock, node) as ownership:
        assert ownership.held == {}
        await _advance(clock, _ms(RETRY_MIN_S) - 1)
        assert len(node.asked) == 1
        await _advance(clock, 1)
        assert node.asked == [(0, 0), (0, _ms(RETRY_MIN_S))]
        assert list(ownership.held) == [0]
        assert (ownership.healthy, ownership.failures) == (True, 0)


def _held_by_another(partitions: int) -> _Etcd:
    etcd = _Etcd()
    etcd.register("other")
    for partition in range(partitions):
        etcd.hold(partition, "other")
    return etcd


async def test_it_settles_a_session_ttl_after_it_began_waiting_for_a_silent_holder() -> None:
    clock, etcd = ManualClock(), _held_by_another(2)
    async with _owning(etcd, clock, _Node(clock), partitions=2) as ownership:
        assert ownership.held == {}, "both are held by the other node"
        assert not ownership.settled.is_set(), "one of the two is this node's to take"
        await _advance(clock, _ms(TTL_S) - 1)
        assert not ownership.settled.is_set()
        await _advance(clock, 1)
        assert ownership.settled.is_set(), "a holder gone silent has let go by now"


async def test_it_takes_what_it_is_given_the_moment_the_holder_hands_it_over() -> None:
    clock, etcd = ManualClock(), _held_by_another(2)
    node = _Node(clock)
    async with _owning(etcd, clock, node, partitions=2) as ownership:
        await _advance(clock, 3000)
        assert not ownership.settled.is_set()
        etcd.let_go(0)
        etcd.let_go(1)
        await _quiet()
        assert len(ownership.held) == 1, "its share of two between two nodes"
        assert [at for _, at in node.asked] == [3000], "taken at once, not at a timer"
        assert ownership.settled.is_set()
