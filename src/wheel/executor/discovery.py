"""Finding scheduler nodes: a live view of the cluster in etcd, and one link per listed node.

`ClusterView` mirrors `nodes/`, `partitions/` and `config` (see
coordinator/layout.py), which answers "where is node X" and "who owns job
J's partition now". `Discovery` keeps a `NodeLink` running for every listed
node: a node that appears is connected to, one that disappears has its link
cancelled (its stream closes), one whose address changed is reconnected.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable

from wheel.coordinator.etcd import Etcd, KeyValue
from wheel.coordinator.layout import Layout, decode
from wheel.coordinator.mirror import PrefixMirror
from wheel.coordinator.registry import NodeInfo
from wheel.executor.connection import NodeLink
from wheel.model.ids import JobId, partition_of

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


def _node_of(kv: KeyValue) -> str | None:
    try:
        return str(decode(kv.value)["node"])
    except _UNREADABLE:
        return None


class Discovery:
    def __init__(self, view: ClusterView, link: Callable[[str, str], NodeLink]) -> None:
        self._view = view
        self._make_link = link
        self.links: dict[str, NodeLink] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.reconciled = asyncio.Event()
        """Set after each reconciliation, then replaced: await the next one."""

    async def run(self) -> None:
        """Follow the node list until cancelled; cancelling closes every link."""
        try:
            while True:
                changed = self._view.nodes_changed
                await self._reconcile(self._view.nodes())
                await changed.wait()
        finally:
            for node_id in list(self._tasks):
                await self._drop(node_id)

    async def _reconcile(self, listed: dict[str, str]) -> None:
        for node_id, link in list(self.links.items()):
            if listed.get(node_id) != link.address:
                log.info("discovery.node_gone", extra={"node": node_id, "address": link.address})
                await self._drop(node_id)
        for node_id, address in sorted(listed.items()):
            if node_id not in self.links:
                log.info("discovery.node_found", extra={"node": node_id, "address": address})
                link = self._make_link(node_id, address)
                self.links[node_id] = link
                self._tasks[node_id] = asyncio.create_task(link.run(), name=f"link {node_id}")
        self.reconciled.set()
        self.reconciled = asyncio.Event()

    async def _drop(self, node_id: str) -> None:
        self.links.pop(node_id, None)
        task = self._tasks.pop(node_id, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
