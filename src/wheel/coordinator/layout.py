"""Where things live in etcd: readable JSON under /wheel/<cluster>/.

    /wheel/<cluster>/config              {"partitions": 256}
    /wheel/<cluster>/nodes/<id>          {"node", "address", "since", "assignment"}  (its lease)
    /wheel/<cluster>/partitions/<nnnn>   {"node", "since"}              (the owner's lease)
    /wheel/<cluster>/executors/<id>      {"executor", "address", "pools", ...}
    /wheel/<cluster>/links/<node>        {"executors": {...}, "ready": {...}}  (the node's lease)
    /wheel/<cluster>/departed/<node>/<lease>  {"node", "state", "gone_at", "held", "taken"}  (1 h)

`etcdctl get --prefix /wheel/<cluster>/partitions/` shows every owner; a
partition key's create revision is the partition's epoch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wheel.model.ids import PartitionId

DEFAULT_PARTITIONS = 256


@dataclass(frozen=True, slots=True)
class Layout:
    cluster: str

    @property
    def root(self) -> str:
        return f"/wheel/{self.cluster}/"

    @property
    def config(self) -> str:
        return f"{self.root}config"

    @property
    def nodes(self) -> str:
        return f"{self.root}nodes/"

    @property
    def partitions(self) -> str:
        return f"{self.root}partitions/"

    @property
    def executors(self) -> str:
        return f"{self.root}executors/"

    @property
    def links(self) -> str:
        """`links/<node>`: the executors streaming to that node, what they serve, and what
        waits there (for `explain`, job warnings and `wheel executors`)."""
        return f"{self.root}links/"

    @property
    def breakers(self) -> str:
        """`breakers/<node>`: the task types whose circuit breaker is open on that node."""
        return f"{self.root}breakers/"

    @property
    def departed(self) -> str:
        """`departed/<node>/<lease>`: a node that left or was lost in the last hour, and who
        took its partitions (coordinator/departures.py)."""
        return f"{self.root}departed/"

    def node(self, node_id: str) -> str:
        return f"{self.nodes}{node_id}"

    def partition(self, partition: int) -> str:
        return f"{self.partitions}{partition:04d}"

    def partition_of(self, key: str) -> PartitionId:
        """The partition a `partitions/<nnnn>` key names; ValueError for any other key."""
        name = key.removeprefix(self.partitions)
        if name == key or not name.isdigit() or not name.isascii():
            raise ValueError(f"{key[:200]!r} is not a partition key under {self.partitions}")
        return PartitionId(int(name))


def encode(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True).encode()


def decode(value: bytes) -> dict[str, Any]:
    document = json.loads(value)
    if not isinstance(document, dict):
        raise ValueError("expected a JSON object")
    return document
