"""Who is alive: scheduler nodes and executors, registered under leases, found by watching.

An executor registers `executors/<id>` (address, pools, task types,
capacity) under its session's lease: when it dies its entry goes with the
lease. `Directory` keeps live copies of both lists for whoever needs them —
scheduler nodes to find executors, executors to find nodes, `wheel shards`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from wheel.coordinator.etcd import Etcd, KeyValue
from wheel.coordinator.layout import Layout, decode, encode
from wheel.coordinator.mirror import PrefixMirror
from wheel.coordinator.session import Session


@dataclass(frozen=True, slots=True)
class ExecutorInfo:
    executor_id: str
    address: str
    pools: tuple[str, ...]
    task_types: tuple[str, ...]
    capacity: int

    def document(self) -> dict[str, object]:
        return {
            "executor": self.executor_id,
            "address": self.address,
            "pools": list(self.pools),
            "task_types": list(self.task_types),
            "capacity": self.capacity,
        }

    @classmethod
    def from_kv(cls, kv: KeyValue) -> ExecutorInfo:
        doc = decode(kv.value)
        return cls(
            executor_id=str(doc["executor"]),
            address=str(doc.get("address", "")),
            pools=tuple(doc.get("pools", ())),
            task_types=tuple(doc.get("task_types", ())),
            capacity=int(doc.get("capacity", 0)),
        )


@dataclass(frozen=True, slots=True)
class NodeInfo:
    node_id: str
    address: str
    since: str = ""
    """When it registered this session (ISO 8601; empty if it did not say)."""

    @classmethod
    def from_kv(cls, kv: KeyValue) -> NodeInfo:
        doc = decode(kv.value)
        return cls(
            node_id=str(doc["node"]),
            address=str(doc.get("address", "")),
            since=str(doc.get("since", "")),
        )


async def register_executor(
    etcd: Etcd, layout: Layout, info: ExecutorInfo, session: Session
) -> None:
    """Announce an executor for as long as its session lives."""
    key = f"{layout.executors}{info.executor_id}"
    await etcd.put(key, encode(info.document()), lease=session.lease_id)


class Directory:
    """Live lists of the cluster's nodes and executors."""

    def __init__(self, etcd: Etcd, layout: Layout) -> None:
        self._nodes = PrefixMirror(etcd, layout.nodes)
        self._executors = PrefixMirror(etcd, layout.executors)

    async def start(self) -> None:
        await self._nodes.start()
        await self._executors.start()

    async def stop(self) -> None:
        await self._nodes.stop()
        await self._executors.stop()

    def nodes(self) -> list[NodeInfo]:
        return sorted((NodeInfo.from_kv(kv) for kv in self._nodes.items.values()),
                      key=lambda n: n.node_id)  # fmt: skip

    def executors(self) -> list[ExecutorInfo]:
        return sorted((ExecutorInfo.from_kv(kv) for kv in self._executors.items.values()),
                      key=lambda e: e.executor_id)  # fmt: skip

    async def next_change(self) -> None:
        """Return after the next change to either list."""
        nodes, executors = self._nodes.changed, self._executors.changed
        waits = {asyncio.ensure_future(nodes.wait()), asyncio.ensure_future(executors.wait())}
        _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
