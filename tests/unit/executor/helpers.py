"""A cluster of a test's own in the shared etcd (fake nodes listed in it, executors), and
handlers that block until released."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.unit.executor.fake_node import FakeNode
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout, encode
from wheel.executor.config import ExecutorConfig
from wheel.executor.connection import Stream
from wheel.executor.context import TaskContext
from wheel.executor.executor import Executor
from wheel.executor.messages import Dispatch, Report
from wheel.executor.tasks import TaskRegistry


class Gate:
    """Handlers that block until the test lets them go, recording what happened to them."""

    def __init__(self) -> None:
        self.started: asyncio.Queue[str] = asyncio.Queue()
        self.order: list[str] = []
        self.cancelled: set[str] = set()
        self._release: dict[str, asyncio.Event] = {}

    def _event(self, execution_id: str) -> asyncio.Event:
        return self._release.setdefault(execution_id, asyncio.Event())

    def release(self, execution_id: str) -> None:
        self._event(execution_id).set()

    async def next_started(self) -> str:
        return await asyncio.wait_for(self.started.get(), 10)

    async def handler(self, ctx: TaskContext) -> None:
        self.order.append(ctx.execution_id)
        self.started.put_nowait(ctx.execution_id)
        try:
            await self._event(ctx.execution_id).wait()
        except asyncio.CancelledError:
            self.cancelled.add(ctx.execution_id)
            raise


class Cluster:
    def __init__(self, layout: Layout, endpoint: str, etcd: Etcd, raw: Etcd) -> None:
        self.layout = layout
        self.endpoint = endpoint
        self.etcd = etcd
        self._raw = raw
        self.nodes: list[FakeNode] = []
        self.executors: list[Executor] = []

    async def add_node(self, node_id: str, **options: Any) -> FakeNode:
        node = FakeNode(node_id, **options)
        await node.start()
        self.nodes.append(node)
        await self.list_node(node_id, node.address)
        return node

    async def list_node(self, node_id: str, address: str) -> None:
        document = {"node": node_id, "address": address, "since": "test"}
        await self.etcd.put(self.layout.node(node_id), encode(document))

    async def unlist_node(self, node_id: str) -> None:
        await self._raw.delete(self.layout.node(node_id))

    async def set_owner(self, partitions: int, partition: int, node_id: str) -> None:
        await self.etcd.put(self.layout.config, encode({"partitions": partitions}))
        owner = {"node": node_id, "since": "test"}
        await self.etcd.put(self.layout.partition(partition), encode(owner))

    async def executor(self, registry: TaskRegistry, **options: Any) -> Executor:
        settings: dict[str, Any] = {
            "executor_id": f"ex-{uuid.uuid4().hex[:6]}",
            "cluster": self.layout.cluster,
            "etcd_endpoint": self.endpoint,
            "pools": {"default": 2},
            "hold": 0,  # credit is the concurrency, unless a test holds runs ahead
            "reconnect_min_s": 0.01,
            "reconnect_max_s": 0.2,
            "drain_timeout_s": 5.0,
            "flush_timeout_s": 0.2,  # fake nodes acknowledge only when told to
            **options,
        }
        executor = Executor(ExecutorConfig(**settings), registry)
        await executor.start()
        self.executors.append(executor)
        return executor


def registry(gate: Gate) -> TaskRegistry:
    tasks = TaskRegistry()
    tasks.register("block", gate.handler)
    tasks.register("noop", lambda ctx: None)
    return tasks


class Kept:
    """The outbox, as a collaborator: what was reported, and an event per report."""

    def __init__(self) -> None:
        self.reports: list[Report] = []
        self._by_key: dict[tuple[str, int], Report] = {}
        self.changed = asyncio.Event()

    def add(self, report: Report, origin: Stream | None) -> None:
        self.reports.append(report)
        self._by_key[report.key] = report
        self.changed.set()

    def acknowledge(self, execution_id: str, fence: int) -> bool:
        return False

    def __contains__(self, key: tuple[str, int]) -> bool:
        return False

    def stream_up(self, stream: Stream) -> None: ...
    def stream_down(self, stream: Stream) -> None: ...

    async def report_of(self, dispatch: Dispatch) -> Report:
        async with asyncio.timeout(30):
            while (report := self._by_key.get(dispatch.key)) is None:
                self.changed.clear()
                await self.changed.wait()
            return report

    def of(self, dispatch: Dispatch) -> Report | None:
        """The report of `dispatch`'s run, if there is one yet."""
        return self._by_key.get(dispatch.key)
