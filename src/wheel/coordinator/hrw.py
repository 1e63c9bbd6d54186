"""Rendezvous (highest random weight) hashing: which node owns which partition.

Every node scores every partition, `score(node, partition) = blake2b(node,
partition)`, and the partition belongs to the node with the highest score.
Each node computes the whole assignment from the live node set alone — no
coordination beyond agreeing on that set — and when a node joins or leaves,
only the partitions it wins or held move: the minimum any scheme can move.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from wheel.model.ids import PartitionId


def score(node_id: str, partition: int) -> int:
    digest = hashlib.blake2b(
        f"{node_id}\x00{partition}".encode(), digest_size=8, person=b"wheel-hrw"
    ).digest()
    return int.from_bytes(digest, "big")


def owner(partition: int, nodes: Iterable[str]) -> str | None:
    """The node that should own `partition` (ties, vanishingly rare, go to the larger id)."""
    return max(nodes, key=lambda node: (score(node, partition), node), default=None)


def assignment(nodes: Iterable[str], partition_count: int) -> dict[PartitionId, str]:
    """Every partition's rightful owner among `nodes` (empty when there are none)."""
    live = sorted(set(nodes))
    if not live:
        return {}
    result = {}
    for partition in range(partition_count):
        chosen = owner(partition, live)
        assert chosen is not None
        result[PartitionId(partition)] = chosen
    return result


def share(node_id: str, nodes: Iterable[str], partition_count: int) -> set[PartitionId]:
    """The partitions `node_id` should own among `nodes`."""
    return {p for p, n in assignment([*nodes, node_id], partition_count).items() if n == node_id}
