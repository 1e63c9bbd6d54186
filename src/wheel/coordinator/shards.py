"""What `wheel shards` shows: every partition, its owner and its epoch, read from etcd."""

from __future__ import annotations

from dataclasses import dataclass

from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import DEFAULT_PARTITIONS, Layout, decode
from wheel.model.ids import PartitionId


@dataclass(frozen=True, slots=True)
class Shard:
    partition: int
    node_id: str | None
    """None: no node holds it right now."""
    epoch: int | None
    since: str | None


async def shards(etcd: Etcd, layout: Layout) -> list[Shard]:
    """One row per partition of the cluster, held or not."""
    config = await etcd.get(layout.config)
    count = int(decode(config.value)["partitions"]) if config else DEFAULT_PARTITIONS
    kvs, _ = await etcd.get_prefix(layout.partitions)
    held = {layout.partition_of(kv.key): kv for kv in kvs}
    rows = []
    for partition in range(count):
        kv = held.get(PartitionId(partition))
        if kv is None:
            rows.append(Shard(partition, None, None, None))
            continue
        doc = decode(kv.value)
        rows.append(Shard(partition, str(doc.get("node")), kv.create_revision, doc.get("since")))
    return rows
