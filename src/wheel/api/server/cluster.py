"""wheel.v1.Cluster: nodes, partitions and executors as etcd has them (no tenant data)."""

from __future__ import annotations

from collections import Counter

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel.api.server.rpc import Rpc, Service
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.registry import ExecutorInfo, NodeInfo
from wheel.coordinator.shards import shards
from wheel.model.ids import TenantId


class ClusterApi:
    def __init__(self, etcd: Etcd, layout: Layout) -> None:
        self._etcd = etcd
        self._layout = layout

    def service(self) -> Service:
        return Service(
            "wheel.v1.Cluster",
            [
                Rpc("ListNodes", api.ListNodesRequest, self.nodes),
                Rpc("ListPartitions", api.ListPartitionsRequest, self.partitions),
                Rpc("ListExecutors", api.ListExecutorsRequest, self.executors),
            ],
        )

    async def nodes(self, request: api.ListNodesRequest, tenant: TenantId) -> api.ListNodesResponse:
        kvs, _ = await self._etcd.get_prefix(self._layout.nodes)
        held = Counter(s.node_id for s in await shards(self._etcd, self._layout) if s.node_id)
        nodes = sorted((NodeInfo.from_kv(kv) for kv in kvs), key=lambda n: n.node_id)
        return api.ListNodesResponse(
            nodes=[
                api.Node(node_id=n.node_id, address=n.address, partitions=held[n.node_id])
                for n in nodes
            ]
        )

    async def partitions(
        self, request: api.ListPartitionsRequest, tenant: TenantId
    ) -> api.ListPartitionsResponse:
        return api.ListPartitionsResponse(
            partitions=[
                api.PartitionOwner(
                    partition=s.partition, node_id=s.node_id or "", epoch=s.epoch or 0
                )
                for s in await shards(self._etcd, self._layout)
            ]
        )

    async def executors(
        self, request: api.ListExecutorsRequest, tenant: TenantId
    ) -> api.ListExecutorsResponse:
        kvs, _ = await self._etcd.get_prefix(self._layout.executors)
        found = sorted((ExecutorInfo.from_kv(kv) for kv in kvs), key=lambda e: e.executor_id)
        return api.ListExecutorsResponse(
            executors=[
                api.ExecutorInfo(
                    executor_id=e.executor_id,
                    pools=list(e.pools),
                    task_types=list(e.task_types),
                    capacity=e.capacity,
                )
                for e in found
            ]
        )
