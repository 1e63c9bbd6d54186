"""ListNodes against a real etcd: departed nodes with their takers, and how many nodes the
cluster should have (a node counts as missing only while its latest departure is a loss)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel.api.server.cluster import ClusterApi
from wheel.coordinator.departures import LEFT, LOST, Departure, add_takers, record
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout, encode
from wheel.local import LocalServices
from wheel.model.ids import new_tenant_id


async def test_expected_counts_live_nodes_and_lost_ones_not_back(
    local_services: LocalServices,
) -> None:
    layout = Layout(f"test-{uuid.uuid4().hex[:8]}")
    etcd = await Etcd.connect(local_services.etcd.endpoint)
    now = datetime.now(UTC)
    try:
        lease = await etcd.grant(60)
        for node_id in ("node-a", "node-c"):  # live, under a session's lease
            document = {"node": node_id, "address": f"{node_id}:7070", "since": now.isoformat()}
            await etcd.put(layout.node(node_id), encode(document), lease=lease)
        departures = [
            Departure("node-b", 0xB1, LOST, now - timedelta(minutes=3), held=(0, 1, 2)),
            Departure("node-c", 0xC1, LOST, now - timedelta(minutes=5), held=(3,)),  # back
            Departure("node-d", 0xD2, LEFT, now - timedelta(minutes=1), held=(4,)),
            Departure("node-d", 0xD1, LOST, now - timedelta(minutes=9), held=(4,)),  # then left
        ]
        for departure in departures:
            assert await record(etcd, layout, departure)
        await add_takers(etcd, layout, "node-b", 0xB1, {0: "node-a", 1: "node-c"})

        answer = await ClusterApi(etcd, layout).nodes(api.ListNodesRequest(), new_tenant_id())

        assert [n.node_id for n in answer.nodes] == ["node-a", "node-c"]
        assert all(n.state == api.NODE_STATE_LIVE for n in answer.nodes)
        assert all(n.HasField("since") for n in answer.nodes)
        assert answer.expected == 3, "node-a and node-c, and node-b, lost and not back"
        assert [(n.node_id, n.state) for n in answer.departed] == [
            ("node-d", api.NODE_STATE_LEFT),
            ("node-b", api.NODE_STATE_LOST),
            ("node-c", api.NODE_STATE_LOST),
            ("node-d", api.NODE_STATE_LOST),
        ]
        [gone] = [n for n in answer.departed if n.node_id == "node-b"]
        assert gone.partitions == 3
        assert [(t.partition, t.node_id) for t in gone.taken] == [
            (0, "node-a"), (1, "node-c"), (2, ""),
        ]  # fmt: skip
        assert abs(gone.gone_at.ToDatetime(UTC) - departures[0].gone_at) < timedelta(seconds=1)
    finally:
        await etcd.delete_prefix(layout.root)
        await etcd.close()
