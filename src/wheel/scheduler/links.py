"""The executors connected to this node: one link per stream, with its credit per pool.

A credit is the executor's permission for one more dispatch of a pool on
that stream. The node claims only as many occurrences as the links of a pool
have credit for, so an occurrence is never claimed — and its lease never
starts running — without an executor ready to take it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from wheel._proto.wheel.v1 import executor_pb2 as pb


@dataclass(eq=False)
class Link:
    """One executor stream to this node."""

    executor_id: str
    pools: tuple[str, ...]
    task_types: tuple[str, ...]
    capacity: int
    serial: int
    credits: dict[str, int] = field(default_factory=dict)
    outbox: asyncio.Queue[pb.SchedulerMessage | None] = field(default_factory=asyncio.Queue)
    open: bool = True

    def send(self, message: pb.SchedulerMessage) -> None:
        if self.open:
            self.outbox.put_nowait(message)

    def close(self) -> None:
        if self.open:
            self.open = False
            self.outbox.put_nowait(None)


class Links:
    def __init__(self) -> None:
        self._links: dict[int, Link] = {}
        self._serial = itertools.count(1)
        self._turn = itertools.count()
        self.changed = asyncio.Event()
        """Set when credit arrives or links come and go (the dispatcher waits on it)."""

    def connect(
        self, executor_id: str, pools: tuple[str, ...], task_types: tuple[str, ...], capacity: int
    ) -> Link:
        link = Link(executor_id, pools, task_types, capacity, next(self._serial))
        self._links[link.serial] = link
        self.changed.set()
        return link

    def disconnect(self, link: Link) -> None:
        link.close()
        self._links.pop(link.serial, None)
        self.changed.set()

    def grant(self, link: Link, pool: str, count: int) -> None:
        if link.serial in self._links:
            link.credits[pool] = link.credits.get(pool, 0) + count
            self.changed.set()

    def credit(self, pool: str) -> int:
        return sum(link.credits.get(pool, 0) for link in self._links.values())

    def take(self, pool: str, task_type: str | None = None) -> Link | None:
        """A link with credit for the pool (and the task type's handler, when given),
        spreading dispatches across links; uses one credit."""
        candidates = [
            link
            for link in self._links.values()
            if link.credits.get(pool, 0) > 0
            and (task_type is None or not link.task_types or task_type in link.task_types)
        ]
        if not candidates:
            return None
        link = candidates[next(self._turn) % len(candidates)]
        link.credits[pool] -= 1
        return link

    def get(self, serial: int) -> Link | None:
        return self._links.get(serial)

    def __iter__(self) -> Iterator[Link]:
        return iter(list(self._links.values()))

    def __len__(self) -> int:
        return len(self._links)

    def close_all(self) -> None:
        for link in list(self._links.values()):
            self.disconnect(link)
