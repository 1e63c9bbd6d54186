"""wheel.v1.Cluster: nodes, partitions and executors as etcd has them (no tenant data)."""

from __future__ import annotations

import contextlib
from collections import Counter
from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel.api.server.rpc import Rpc, Service
from wheel.api.server.served import ExecutorOnNode, ServedView
from wheel.coordinator.departures import LEFT, LOST, departures
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.registry import ExecutorInfo, NodeInfo
from wheel.coordinator.shards import Shard, shards
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
        gone = await departures(self._etcd, self._layout)
        answer = api.ListNodesResponse()
        for node in nodes:
            live = answer.nodes.add(
                node_id=node.node_id,
                address=node.address,
                partitions=held[node.node_id],
                durability=durability.get(node.node_id, ""),
                state=api.NODE_STATE_LIVE,
            )
            _stamp(live.since, node.since)
        for departure in gone:
            entry = answer.departed.add(
                node_id=departure.node_id,
                address=departure.address,
                partitions=len(set(departure.held) | set(departure.taken)),
                state=api.NODE_STATE_LEFT if departure.state == LEFT else api.NODE_STATE_LOST,
            )
            entry.gone_at.FromDatetime(departure.gone_at)
            for partition in sorted(set(departure.held) | set(departure.taken)):
                entry.taken.add(partition=partition, node_id=departure.taken.get(partition, ""))
        live_ids = {node.node_id for node in nodes}
        latest: dict[str, str] = {}
        for departure in gone:  # the latest first: a node's last departure says how it went
            latest.setdefault(departure.node_id, departure.state)
        missing = {n for n, state in latest.items() if state == LOST and n not in live_ids}
        answer.expected = len(live_ids) + len(missing)
        return answer

    async def partitions(
        self, request: api.ListPartitionsRequest, tenant: TenantId
    ) -> api.ListPartitionsResponse:
        return api.ListPartitionsResponse(
            partitions=[_partition(s) for s in await shards(self._etcd, self._layout)]
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
                for pool, slots in stream.slots.items():
                    link.slots[pool] = slots
                link.hold = stream.hold
                _stamp(link.connected_at, stream.since)
        return answer


def _partition(shard: Shard) -> api.PartitionOwner:
    owner = api.PartitionOwner(
        partition=shard.partition, node_id=shard.node_id or "", epoch=shard.epoch or 0
    )
    _stamp(owner.since, shard.since or "")
    return owner


def _stamp(field: Timestamp, iso: str) -> None:
    """Set a timestamp field from an ISO 8601 instant etcd holds; left unset if unreadable."""
    with contextlib.suppress(ValueError):
        field.FromDatetime(datetime.fromisoformat(iso))
