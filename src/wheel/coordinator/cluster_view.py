"""The cluster as etcd has it: nodes, each partition's owner, the partition count.

`ClusterView` mirrors `nodes/`, `partitions/` and `config` (coordinator/layout.py)
and answers "where is node X" and "who owns job J's partition now". Nodes
serve it to executors (WatchCluster on the executor stream); an executor
given etcd instead of nodes reads it itself.
"""

from __future__ import annotations

import asyncio
import json
import logging

from wheel.coordinator.etcd import Etcd, KeyValue
from wheel.coordinator.layout import Layout, decode
from wheel.coordinator.mirror import PrefixMirror
from wheel.coordinator.registry import NodeInfo
from wheel.model.ids import JobId, PartitionId, partition_of

log = logging.getLogger(__name__)

_UNREADABLE = (ValueError, KeyError, TypeError, json.JSONDecodeError)


class ClusterView:
    def __init__(self, etcd: Etcd, layout: Layout) -> None:
        self._layout = layout
        self._nodes = PrefixMirror(etcd, layout.nodes)
        self._partitions = PrefixMirror(etcd, layout.partitions)
        self._config = PrefixMirror(etcd, layout.config)

    async def start(self) -> None:
        for mirror in (self._nodes, self._partitions, self._config):
            await mirror.start()

    async def stop(self) -> None:
        for mirror in (self._nodes, self._partitions, self._config):
            await mirror.stop()

    @property
    def nodes_changed(self) -> asyncio.Event:
        """Set at the next change to the node list (take it before reading `nodes()`)."""
        return self._nodes.changed

    def nodes(self) -> dict[str, str]:
        """Listed nodes: id -> gRPC address (`host:port`)."""
        found: dict[str, str] = {}
        for kv in self._nodes.items.values():
            try:
                node = NodeInfo.from_kv(kv)
            except _UNREADABLE:
                log.warning("discovery.unreadable_node", extra={"key": kv.key})
                continue
            if node.address:
                found[node.node_id] = node.address
        return found

    def partition_count(self) -> int | None:
        kv = self._config.items.get(self._layout.config)
        try:
            return int(decode(kv.value)["partitions"]) if kv is not None else None
        except _UNREADABLE:
            return None

    def owner_of(self, job_id: JobId) -> str | None:
        """The node that owns the job's partition now, as far as etcd has told us."""
        count = self.partition_count()
        if not count:
            return None
        kv = self._partitions.items.get(self._layout.partition(partition_of(job_id, count)))
        return _node_of(kv) if kv is not None else None

    def owners(self) -> list[str]:
        """Every partition's owner by partition number ("" while none); empty while the
        partition count is unknown."""
        count = self.partition_count() or 0
        found = []
        for partition in range(count):
            kv = self._partitions.items.get(self._layout.partition(PartitionId(partition)))
            found.append((_node_of(kv) or "") if kv is not None else "")
        return found

    def change_events(self) -> list[asyncio.Event]:
        """The events the next change to the nodes, partitions or config sets: take them
        before reading, then `await any_set(events)`."""
        return [m.changed for m in (self._nodes, self._partitions, self._config)]


async def any_set(events: list[asyncio.Event]) -> None:
    """Return once any of `events` is set."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def _node_of(kv: KeyValue) -> str | None:
    try:
        return str(decode(kv.value)["node"])
    except _UNREADABLE:
        return None
