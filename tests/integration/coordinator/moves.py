"""Partition moves as etcd records them: a watch of the test's own on `partitions/`.

etcd is where ownership is decided (a partition key is created only if absent, and its
create revision is the epoch), so the watch sees every owner change in the order etcd
made it, whatever any node believed. `MoveLog` keeps every change with the instant it
was seen; `moves()` counts, per partition, the acquisitions by a node other than the one
that held it last (released by A then acquired by B is one move, however long the key
stayed absent), `reacquired()` the acquisitions by the same node again (a new epoch
without a new owner), and `unowned()` how long each key stayed absent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field

from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout, decode
from wheel.model.ids import PartitionId


@dataclass(frozen=True, slots=True)
class Change:
    seen_s: float
    """When the watch delivered it (monotonic)."""
    partition: PartitionId
    node: str | None
    """The new holder; None when the key was deleted."""
    epoch: int
    """The key's create revision (0 for a delete)."""


@dataclass
class MoveLog:
    etcd: Etcd
    layout: Layout
    initial: dict[PartitionId, str] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        kvs, revision = await self.etcd.get_prefix(self.layout.partitions)
        for kv in kvs:
            self.initial[self.layout.partition_of(kv.key)] = str(decode(kv.value)["node"])
        self._task = asyncio.create_task(self._follow(revision + 1), name="move log")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _follow(self, revision: int) -> None:
        async for change in self.etcd.watch_prefix(self.layout.partitions, revision):
            partition = self.layout.partition_of(change.kv.key)
            if change.deleted:
                self.changes.append(Change(time.monotonic(), partition, None, 0))
            else:
                node = str(decode(change.kv.value)["node"])
                self.changes.append(
                    Change(time.monotonic(), partition, node, change.kv.create_revision)
                )
            self.changed.set()
            self.changed = asyncio.Event()

    def mark(self) -> int:
        """Where the log is now: the start of a phase for `moves(since=...)`."""
        return len(self.changes)

    def holders(self, upto: int | None = None) -> dict[PartitionId, str]:
        """Who holds each partition after the first `upto` changes (all by default)."""
        held = dict(self.initial)
        for change in self.changes[:upto]:
            if change.node is None:
                held.pop(change.partition, None)
            else:
                held[change.partition] = change.node
        return held

    def _walk(
        self, since: int, until: int | None
    ) -> tuple[Counter[PartitionId], Counter[PartitionId]]:
        last = self.holders(since)  # the last node to hold each partition, through gaps
        moved: Counter[PartitionId] = Counter()
        again: Counter[PartitionId] = Counter()
        for change in self.changes[since:until]:
            if change.node is None:
                continue
            before = last.get(change.partition)
            if before is not None and before != change.node:
                moved[change.partition] += 1
            elif before == change.node:
                again[change.partition] += 1
            last[change.partition] = change.node
        return moved, again

    def moves(self, since: int = 0, until: int | None = None) -> Counter[PartitionId]:
        """Per partition, how many times a node other than its last holder acquired it."""
        return self._walk(since, until)[0]

    def reacquired(self, since: int = 0, until: int | None = None) -> Counter[PartitionId]:
        """Per partition, how many times its last holder acquired it again (a new epoch)."""
        return self._walk(since, until)[1]

    def unowned(self, since: int = 0, until: int | None = None) -> dict[PartitionId, list[float]]:
        """Per partition, how long each absence of its key lasted (seconds, as the watch saw
        it); an absence still open at `until` counts up to the window's last change."""
        gone: dict[PartitionId, float] = {}
        spans: dict[PartitionId, list[float]] = {}
        window = self.changes[since:until]
        for change in window:
            if change.node is None:
                gone[change.partition] = change.seen_s
            elif change.partition in gone:
                spans.setdefault(change.partition, []).append(
                    change.seen_s - gone.pop(change.partition)
                )
        for partition, at in gone.items():
            spans.setdefault(partition, []).append(window[-1].seen_s - at)
        return spans
