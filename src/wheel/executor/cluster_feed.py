"""The cluster as the nodes tell it: how an executor finds every node without etcd.

    feed = ClusterFeed(["wheel-scheduler:7070"], token=..., credentials=None)
    await feed.start()            # returns once a node has sent the first map
    feed.nodes()                  # {"node-0": "node-0.wheel-scheduler...:7070", ...}

Any node answers `WatchCluster` with every node's address and every
partition's owner, and sends the map again on each change, so one reachable
address is enough: a Kubernetes headless Service name, or a few nodes'
addresses. When the stream breaks the feed goes on to the next address it
knows (the seeds first, then the nodes the last map listed), with backoff;
what it last knew stays in use meanwhile, so the links to live nodes are
not torn down because one node went away.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sequence

import grpc

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel._proto.wheel.v1 import executor_pb2_grpc as pb_grpc
from wheel.executor.connection import open_channel
from wheel.model.ids import JobId, partition_of

log = logging.getLogger(__name__)

_REFUSED = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)


class ClusterFeed:
    def __init__(
        self,
        seeds: Sequence[str],
        *,
        token: str,
        credentials: grpc.ChannelCredentials | None = None,
        backoff_min_s: float = 0.1,
        backoff_max_s: float = 5.0,
        jitter: Callable[[], float] = lambda: random.uniform(0.5, 1.0),
    ) -> None:
        if not seeds:
            raise ValueError("a cluster feed needs at least one node address")
        self._seeds = tuple(seeds)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._credentials = credentials
        self._backoff_min_s = backoff_min_s
        self._backoff_max_s = backoff_max_s
        self._jitter = jitter
        self._nodes: dict[str, str] = {}
        self._owners: list[str] = []
        self._partitions = 0
        self._changed = asyncio.Event()
        self._first = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.source = ""
        """The address the current map came from (for logs and tests)."""
        self.errors: dict[str, str] = {}
        """Each address's last failure ("UNAVAILABLE: ... Connection refused"), until it
        answers: what the executor's log says while it reaches no node."""

    # -- what the executor reads (the same as coordinator.cluster_view.ClusterView) ----------

    @property
    def nodes_changed(self) -> asyncio.Event:
        """Set at the next change to the node list (take it before reading `nodes()`)."""
        return self._changed

    def nodes(self) -> dict[str, str]:
        return dict(self._nodes)

    def partition_count(self) -> int | None:
        return self._partitions or None

    def owner_of(self, job_id: JobId) -> str | None:
        if not self._partitions or len(self._owners) != self._partitions:
            return None
        return self._owners[int(partition_of(job_id, self._partitions))] or None

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Follow the nodes' map; return once the first one has arrived."""
        self._task = asyncio.create_task(self._follow(), name="executor cluster feed")
        await self._first.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    # -- the stream --------------------------------------------------------------------------

    def _candidates(self) -> list[str]:
        """Where to ask next: the seeds, then every node the last map listed."""
        known = [a for _, a in sorted(self._nodes.items()) if a not in self._seeds]
        return [*self._seeds, *known]

    async def _follow(self) -> None:
        delay_s = self._backoff_min_s
        turn = 0
        while True:
            candidates = self._candidates()
            address = candidates[turn % len(candidates)]
            turn += 1
            if await self._watch(address):
                delay_s = self._backoff_min_s
            pause_s = delay_s * self._jitter()
            await asyncio.sleep(pause_s)  # backoff: no address answered this round
            delay_s = min(delay_s * 2, self._backoff_max_s)

    async def _watch(self, address: str) -> bool:
        """One WatchCluster stream from `address`; True if it sent at least one map."""
        received = False
        channel = open_channel(address, self._credentials)
        try:
            stub = pb_grpc.ExecutorStreamStub(channel)
            async for update in stub.WatchCluster(
                pb.WatchClusterRequest(), metadata=self._metadata
            ):
                received = True
                self.errors.pop(address, None)
                self._apply(update, address)
            log.info("feed.ended", extra={"address": address})
        except grpc.aio.AioRpcError as exc:
            self.errors[address] = f"{exc.code().name}: {exc.details()}"
            if exc.code() in _REFUSED:
                log.error(
                    "feed.refused",
                    extra={"address": address, "error": f"{exc.code().name}: {exc.details()}"},
                )
            else:
                log.info(
                    "feed.broken",
                    extra={"address": address, "error": f"{exc.code().name}: {exc.details()}"},
                )
        finally:
            await channel.close()
        return received

    def _apply(self, update: pb.ClusterMap, address: str) -> None:
        nodes = {n.node_id: n.address for n in update.nodes if n.node_id and n.address}
        self._partitions = update.partitions
        self._owners = list(update.owners)
        self.source = address
        if nodes != self._nodes or not self._first.is_set():
            self._nodes = nodes
            self._changed.set()
            self._changed = asyncio.Event()
        self._first.set()
