"""Finding scheduler nodes: one link per node the cluster lists.

Where the list comes from is a `ClusterSource`: the nodes' own WatchCluster
feed (`executor/cluster_feed.py`: no etcd at the executor) or etcd directly
(`coordinator/cluster_view.py`). `Discovery` keeps a `NodeLink` running for
every listed node: a node that appears is connected to, one that disappears
has its link cancelled (its stream closes), one whose address changed is
reconnected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

from wheel.executor.connection import NodeLink
from wheel.model.ids import JobId

log = logging.getLogger(__name__)


class ClusterSource(Protocol):
    """What an executor knows of the cluster: the nodes and who owns which partition."""

    @property
    def nodes_changed(self) -> asyncio.Event:
        """Set at the next change to the node list (take it before reading `nodes()`)."""
        ...

    def nodes(self) -> dict[str, str]:
        """Listed nodes: id -> gRPC address (`host:port`)."""
        ...

    def owner_of(self, job_id: JobId) -> str | None:
        """The node that owns the job's partition now, as far as the source knows."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Discovery:
    def __init__(self, view: ClusterSource, link: Callable[[str, str], NodeLink]) -> None:
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
