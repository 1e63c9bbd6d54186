"""Fired runs held aside, unclaimed and still pending, until something changes.

- parked: its task type's circuit breaker is open. The runs flow again when it
  closes; while it is half-open one goes as the probe.
- capped: its tenant is at its cluster-wide in-flight cap, or its concurrency
  key at its limit (a key is its tenant's). They go back when one of the
  tenant's runs finishes here, or every `CAPPED_RETRY_S` (runs finishing on
  other nodes make room too).
- unserved: no connected executor serves its (pool, task type). They go back
  when the set of links changes and one does.

None of them holds a lease or uses credit, so waiting here costs nothing but
memory; a partition handed over drops its runs (the next owner loads them).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from typing import TypeVar

from wheel.model.ids import ExecutionKey, PartitionId, TenantId
from wheel.scheduler.breaker import Breakers, BreakerState
from wheel.scheduler.links import Links
from wheel.scheduler.ready import Ready, ReadyQueues

log = logging.getLogger(__name__)

CAPPED_RETRY_S = 1.0

_K = TypeVar("_K")


def _drop_partition(waiting: dict[_K, list[Ready]], partition: PartitionId) -> None:
    """Remove a partition's occurrences from queues of waiting ones (and emptied queues)."""
    for name, items in list(waiting.items()):
        kept = [r for r in items if r.partition != partition]
        if kept:
            waiting[name] = kept
        else:
            del waiting[name]


class Aside:
    def __init__(
        self,
        ready: ReadyQueues,
        links: Links,
        breakers: Breakers,
        *,
        known: Callable[[ExecutionKey], bool],
        wake: Callable[[], None],
    ) -> None:
        """`known`: whether the engine still holds a run (one it dropped is not brought
        back); `wake`: the dispatcher has work again."""
        self._ready = ready
        self._links = links
        self._breakers = breakers
        self._known = known
        self._wake = wake
        self.parked: defaultdict[str, list[Ready]] = defaultdict(list)
        """By task type: runs held back while its circuit breaker is open."""
        self.capped: dict[TenantId, list[Ready]] = {}
        """By tenant: runs the claim left because the tenant is at its cluster-wide cap."""
        self.capped_retry_at_s: float | None = None
        """Monotonic: when every capped run is tried again."""
        self.unserved: dict[tuple[str, str], list[Ready]] = {}
        """By (pool, task type): due runs no connected executor serves, left unclaimed."""
        self._served_generation = -1

    def park(self, item: Ready) -> None:
        item.waited = "while its task type's circuit breaker was open"
        self.parked[item.task_type].append(item)

    def unpark(self, now_s: float) -> None:
        """Parked runs flow again when their breaker closes; one goes as its probe."""
        for task_type in list(self.parked):
            items = self.parked[task_type]
            if self._breakers.state(task_type) is BreakerState.CLOSED:
                del self.parked[task_type]
                for item in items:
                    self._ready.push(item)
            elif items and self._breakers.probe_due(task_type, now_s):
                self._ready.push(items.pop(0))  # `allow` in the next round lets it through
                if not items:
                    del self.parked[task_type]

    def wait_for_room(self, item: Ready, now_s: float) -> None:
        """Hold a run whose tenant is at its cap."""
        item.waited = "for room under its tenant's in-flight cap"
        self.capped.setdefault(item.tenant, []).append(item)
        if self.capped_retry_at_s is None:
            self.capped_retry_at_s = now_s + CAPPED_RETRY_S

    def wait_for_key(self, item: Ready, now_s: float) -> None:
        """Hold a run whose concurrency key is at its limit: with the capped runs, as a
        key's runs are its tenant's (one of them finishing may free it)."""
        self.wait_for_room(item, now_s)
        item.waited = "for its concurrency key's limit"

    def release_capped(self, now_s: float, tenant: TenantId | None = None) -> None:
        """Capped runs of `tenant` (every tenant: None) go back to be claimed."""
        tenants = list(self.capped) if tenant is None else [tenant]
        for name in tenants:
            for item in self.capped.pop(name, []):
                if self._known(item.key):
                    self._ready.push(item)
        if not self.capped:
            self.capped_retry_at_s = None
        elif tenant is None:
            self.capped_retry_at_s = now_s + CAPPED_RETRY_S
        self._wake()

    def set_unserved(self, item: Ready) -> None:
        """Hold a run no connected executor serves: unclaimed, pending, no attempt."""
        item.waited = "for an executor"
        waiting = self.unserved.setdefault((item.pool, item.task_type), [])
        if not waiting:
            log.warning(
                "engine.task_type_unserved",
                extra={"task_type": item.task_type, "pool": item.pool,
                       "connected": sorted({t for link in self._links for t in link.task_types})},
            )  # fmt: skip
        waiting.append(item)

    def serve_waiting(self) -> None:
        """Unserved runs go back to be claimed once an executor serves them."""
        if self._served_generation == self._links.generation:
            return
        self._served_generation = self._links.generation
        for (pool, task_type), items in list(self.unserved.items()):
            if self._links.serves(pool, task_type):
                del self.unserved[(pool, task_type)]
                for item in items:
                    if self._known(item.key):
                        self._ready.push(item)

    def revisit(self, now_s: float) -> None:
        """What the dispatcher does after every wake: unpark, serve, retry the capped."""
        self.unpark(now_s)
        self.serve_waiting()
        if self.capped_retry_at_s is not None and now_s >= self.capped_retry_at_s:
            self.release_capped(now_s)

    def next_change_s(self) -> float | None:
        """The monotonic instant of the next breaker change or capped retry, if any."""
        due = [d for d in (self._breakers.next_change(), self.capped_retry_at_s) if d is not None]
        return min(due) if due else None

    def drop_partition(self, partition: PartitionId) -> None:
        _drop_partition(self.parked, partition)
        _drop_partition(self.capped, partition)
        _drop_partition(self.unserved, partition)

    def unserved_by_task_type(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for (_, task_type), items in self.unserved.items():
            counts[task_type] = counts.get(task_type, 0) + len(items)
        return dict(sorted(counts.items()))

    def counts(self) -> dict[str, int]:
        return {
            "parked": sum(len(items) for items in self.parked.values()),
            "unserved": sum(len(items) for items in self.unserved.values()),
        }
