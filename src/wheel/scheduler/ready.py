"""Fired occurrences waiting to be claimed: per pool, fair across tenants, priority first.

A node claims only what executors have credit for, so when a spike comes
due the rest waits here — unclaimed, still pending in Postgres, holding no
lease. `take` picks the next batch: the highest priority waiting first; among
tenants with work at that priority, round-robin, one occurrence each in turn,
never past a tenant's room (its in-flight cap). One tenant with ten thousand
due occurrences therefore delays another tenant's single one by at most one
turn of the rotation, not by ten thousand claims.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId


def epoch_ms(instant: datetime) -> int:
    """An aware instant as integer epoch milliseconds (the wheel's and `fire_at_ms`'s unit)."""
    return int(instant.timestamp() * 1000)


@dataclass(slots=True, eq=False)
class Ready:
    """A loaded occurrence and what routing it needs before it is claimed."""

    key: ExecutionKey
    partition: PartitionId
    tenant: TenantId
    pool: str
    task_type: str
    priority: int
    overlap: str
    fire_at_ms: int
    not_started: int = 0
    """Times an executor gave it back unstarted in a row: each retry waits longer."""
    waited: str = ""
    """What it last waited for, in words for a misfire's reason ("for an executor");
    "" until it waits for something."""


@dataclass(slots=True)
class _Pool:
    heaps: dict[TenantId, list[tuple[int, int, int, Ready]]] = field(default_factory=dict)
    rotation: deque[TenantId] = field(default_factory=deque)
    size: int = 0


class ReadyQueues:
    def __init__(self) -> None:
        self._pools: dict[str, _Pool] = {}
        self._seq = itertools.count()

    def push(self, item: Ready) -> None:
        pool = self._pools.setdefault(item.pool, _Pool())
        heap = pool.heaps.get(item.tenant)
        if heap is None:
            heap = pool.heaps[item.tenant] = []
            pool.rotation.append(item.tenant)
        heapq.heappush(heap, (-item.priority, item.fire_at_ms, next(self._seq), item))
        pool.size += 1

    def take(
        self,
        pool_name: str,
        count: int,
        room: Callable[[TenantId], int],
        *,
        busy: Collection[JobId] = (),
        due_by_ms: int | None = None,
    ) -> list[Ready]:
        """Up to `count` occurrences of the pool, fairly; `room(tenant)` caps each tenant's
        runs due by `due_by_ms` (all, when None): a run claimed ahead of its instant is not
        held back by its tenant's cap.

        Of a job whose overlap policy is not 'allow', at most one occurrence is
        taken per call, and none while the job is in `busy` (one of its
        occurrences is being claimed): the claim then decides about the running one.
        """
        pool = self._pools.get(pool_name)
        if pool is None or count <= 0:
            return []
        left = {tenant: room(tenant) for tenant in pool.heaps}
        taken: list[Ready] = []
        held: list[Ready] = []
        exclusive: set[JobId] = set(busy)
        while len(taken) < count and pool.size:
            tenant = self._next_tenant(pool, left, due_by_ms)
            if tenant is None:
                break
            heap = pool.heaps[tenant]
            item = heapq.heappop(heap)[3]
            pool.size -= 1
            if not heap:
                del pool.heaps[tenant]
                pool.rotation.remove(tenant)
            if item.overlap != "allow":
                if item.key.job_id in exclusive:
                    held.append(item)
                    continue
                exclusive.add(item.key.job_id)
            if due_by_ms is None or item.fire_at_ms <= due_by_ms:
                left[tenant] -= 1
            taken.append(item)
        for item in held:
            self.push(item)
        if not pool.size:
            del self._pools[pool_name]
        return taken

    @staticmethod
    def _next_tenant(
        pool: _Pool, left: dict[TenantId, int], due_by_ms: int | None
    ) -> TenantId | None:
        """The first tenant in rotation at the highest waiting priority with room for its
        next run (one not due yet needs none); rotates it."""
        best: TenantId | None = None
        best_priority = 0
        for tenant in pool.rotation:
            ahead = due_by_ms is not None and pool.heaps[tenant][0][3].fire_at_ms > due_by_ms
            if left.get(tenant, 0) <= 0 and not ahead:
                continue
            priority = -pool.heaps[tenant][0][0]
            if best is None or priority > best_priority:
                best, best_priority = tenant, priority
        if best is not None:
            pool.rotation.remove(best)
            pool.rotation.append(best)
        return best

    def drop_partition(self, partition: PartitionId) -> list[Ready]:
        """Remove and return every waiting occurrence of a partition (it was handed over)."""
        everything = list(self)
        dropped = [item for item in everything if item.partition == partition]
        if dropped:
            self._pools.clear()
            for item in everything:
                if item.partition != partition:
                    self.push(item)
        return dropped

    def pools(self) -> list[str]:
        """Pools with occurrences waiting."""
        return list(self._pools)

    def oldest_fire_at_ms(self, pool_name: str | None = None) -> int | None:
        """The earliest instant waiting (the backlog's age starts there), in one pool or
        all. Read off each tenant's next run (cheap: the loaded runs are not walked), which
        is its oldest at the highest priority it has waiting."""
        pools = list(self._pools) if pool_name is None else [pool_name]
        heads = [self.oldest(pool) for pool in pools]
        return min((head.fire_at_ms for head in heads if head is not None), default=None)

    def oldest(self, pool_name: str, room: Callable[[TenantId], int] | None = None) -> Ready | None:
        """The longest-waiting of the tenants' next runs in the pool, of tenants with `room`
        (all without it)."""
        pool = self._pools.get(pool_name)
        if pool is None:
            return None
        heads = [
            heap[0][3] for tenant, heap in pool.heaps.items() if room is None or room(tenant) > 0
        ]
        return min(heads, key=lambda head: head.fire_at_ms, default=None)

    def waiting(self, pool_name: str) -> int:
        pool = self._pools.get(pool_name)
        return pool.size if pool else 0

    def __len__(self) -> int:
        return sum(pool.size for pool in self._pools.values())

    def __iter__(self) -> Iterator[Ready]:
        for pool in self._pools.values():
            for heap in pool.heaps.values():
                for entry in heap:
                    yield entry[3]
