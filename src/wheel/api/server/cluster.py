"""wheel.v1.Cluster: nodes, partitions and executors as etcd has them (no tenant data)."""

from __future__ import annotations

import contextlib
from collections import Counter
from datetime import datetime

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel.api.server.rpc import Rpc, Service
from wheel.api.server.served import ExecutorOnNode, ServedView
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.registry import ExecutorInfo, NodeInfo
from wheel.coordinator.shards import shards
from wheel.model.ids import TenantId


class ClusterApi:
    def __init__(self, etcd: Etcd, layout: Layout, served: ServedView | None = None) -> None:
        self._etcd = etcd
        self._layout = layout
        self._served = served or ServedView(etcd, layout)

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
        durability = (await self._served.now()).durability
        return api.ListNodesResponse(
            nodes=[
                api.Node(
                    node_id=n.node_id,
                    address=n.address,
                    partitions=held[n.node_id],
                    durability=durability.get(n.node_id, ""),
                )
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
        registered = {e.executor_id: e for e in (ExecutorInfo.from_kv(kv) for kv in kvs)}
        links: dict[str, list[ExecutorOnNode]] = {}
        for on_node in (await self._served.now()).executors:
            links.setdefault(on_node.executor_id, []).append(on_node)
        answer = api.ListExecutorsResponse()
        for executor_id in sorted(registered.keys() | links.keys()):
            streams = links.get(executor_id, [])
            known = registered.get(executor_id)
            info = answer.executors.add(executor_id=executor_id)
            if known is not None:
                info.pools.extend(known.pools)
                info.task_types.extend(known.task_types)
                info.capacity = known.capacity
            elif streams:  # streaming to nodes without a registration: as its Hello said
                info.pools.extend(streams[0].pools)
                info.task_types.extend(streams[0].task_types)
                info.capacity = streams[0].capacity
            for stream in streams:
                link = info.links.add(node_id=stream.node_id, in_flight=stream.in_flight)
                for pool, credit in stream.credit.items():
                    link.credit[pool] = max(0, credit)
                with contextlib.suppress(ValueError):
                    link.connected_at.FromDatetime(datetime.fromisoformat(stream.since))
        return answer
