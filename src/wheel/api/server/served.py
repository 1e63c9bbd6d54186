"""What the cluster's executors serve now, read from the nodes' `links/<node>` documents.

Every node publishes the executors streaming to it (pools, task types,
credit) and what waits on it, on its session lease. The API reads the whole
prefix (one etcd round trip, cached for `ttl_s`) to warn that a job's task
type has no executor, and `explain` reads it to name the one reason a due run
is not claimed. A node that is gone takes its document with its lease.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout, decode
from wheel.model.http_tasks import is_http_task_type


@dataclass(frozen=True, slots=True)
class ExecutorOnNode:
    node_id: str
    executor_id: str
    pools: tuple[str, ...]
    task_types: tuple[str, ...]
    """Empty: it takes any task type."""
    capacity: int
    credit: Mapping[str, int]
    since: str
    slots: Mapping[str, int] = field(default_factory=dict)
    """Handlers it runs at once, by pool, as its Hello said (empty: it did not say)."""
    hold: int = 0
    """Credit per pool beyond its slots: runs held until their instant."""
    in_flight: int = 0
    """Runs that node dispatched to it and has not seen finish."""
    held_back_since: str = ""
    """Set while that node holds it back (a lease lapsed while it was silent): it gets no
    dispatches there until it answers the node's probes."""
    probes: int = 0

    def serves(self, pool: str, task_type: str) -> bool:
        if is_http_task_type(task_type):
            return False  # the nodes' own runners do
        return pool in self.pools and (not self.task_types or task_type in self.task_types)


@dataclass(frozen=True, slots=True)
class Served:
    """The executors connected to every node, as the nodes last published them."""

    executors: tuple[ExecutorOnNode, ...] = ()
    ready: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """By node, then pool: fired runs waiting there for executor credit."""
    http_runners: frozenset[str] = frozenset()
    """The nodes that run HTTP tasks (every node does, once it has published)."""
    stalled: Mapping[str, str] = field(default_factory=dict)
    """By node: why its dispatch is stalled (nodes whose dispatch is not stalled are absent)."""
    durability: Mapping[str, str] = field(default_factory=dict)
    """By node: why a job it acknowledges could be lost (nodes whose Postgres waits for a
    synchronous standby are absent)."""

    def serves(self, pool: str, task_type: str, node_id: str | None = None) -> bool:
        if is_http_task_type(task_type):
            return bool(self.http_runners) if node_id is None else node_id in self.http_runners
        return any(
            e.serves(pool, task_type)
            for e in self.executors
            if node_id is None or e.node_id == node_id
        )

    def on(self, node_id: str) -> list[ExecutorOnNode]:
        return [e for e in self.executors if e.node_id == node_id]

    def task_types(self) -> list[str]:
        return sorted({t for e in self.executors for t in e.task_types})

    def unserved(self, pool: str, task_type: str) -> str | None:
        """Why no executor would run this task type in this pool, or None if one would."""
        if self.serves(pool, task_type):
            return None
        if is_http_task_type(task_type):
            return f"no node has published that it runs HTTP tasks ({task_type!r}) yet"
        if not self.executors:
            return f"no executor is connected: task type {task_type!r} has nobody to run it"
        serving = self.task_types()
        listed = ", ".join(serving) if serving else "none"
        in_pool = "" if any(pool in e.pools for e in self.executors) else f" in pool {pool!r}"
        return (
            f"no connected executor serves task type {task_type!r}{in_pool}; "
            f"connected executors serve: {listed}"
        )


def _executors(node_id: str, document: Mapping[str, Any]) -> list[ExecutorOnNode]:
    found = []
    for executor_id, doc in dict(document.get("executors", {})).items():
        found.append(
            ExecutorOnNode(
                node_id=node_id,
                executor_id=str(executor_id),
                pools=tuple(str(p) for p in doc.get("pools", ())),
                task_types=tuple(str(t) for t in doc.get("task_types", ())),
                capacity=int(doc.get("capacity", 0)),
                credit={str(k): int(v) for k, v in dict(doc.get("credit", {})).items()},
                since=str(doc.get("since", "")),
                in_flight=int(doc.get("in_flight", 0)),
                slots={str(k): int(v) for k, v in dict(doc.get("slots", {})).items()},
                hold=int(doc.get("hold", 0)),
                held_back_since=str(doc.get("held_back_since", "")),
                probes=int(doc.get("probes", 0)),
            )
        )
    return found


class ServedView:
    """`Served`, read from etcd at most once per `ttl_s`."""

    def __init__(
        self,
        etcd: Etcd,
        layout: Layout,
        *,
        ttl_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._etcd = etcd
        self._layout = layout
        self._ttl_s = ttl_s
        self._clock = clock
        self._cached: tuple[float, Served] | None = None

    async def now(self) -> Served:
        cached = self._cached
        if cached is not None and cached[0] > self._clock():
            return cached[1]
        kvs, _ = await self._etcd.get_prefix(self._layout.links)
        executors: list[ExecutorOnNode] = []
        ready: dict[str, dict[str, int]] = {}
        runners: set[str] = set()
        stalled: dict[str, str] = {}
        durability: dict[str, str] = {}
        for kv in kvs:
            node_id = kv.key.removeprefix(self._layout.links)
            try:
                document = decode(kv.value)
                executors.extend(_executors(node_id, document))
                ready[node_id] = {str(k): int(v) for k, v in document.get("ready", {}).items()}
                if document.get("http_runner") is not None:
                    runners.add(node_id)
                if document.get("stalled"):
                    stalled[node_id] = str(document["stalled"])
                if document.get("durability"):
                    durability[node_id] = str(document["durability"])
            except (ValueError, TypeError, AttributeError, json.JSONDecodeError):
                continue  # a document this version cannot read says nothing it can use
        ordered = tuple(sorted(executors, key=lambda e: (e.node_id, e.executor_id)))
        served = Served(ordered, ready, frozenset(runners), stalled, durability)
        self._cached = (self._clock() + self._ttl_s, served)
        return served
