"""Who should own which partition: rendezvous hashing with bounded loads, sticky to holders.

The contract: `assign(nodes, holders, partition_count)` is a pure function of what every
node reads from etcd — the live nodes (`nodes/`) and each partition key's holder and
create revision, its epoch (`partitions/`) — so every node computes the same answer
without asking the others, and acts on its own part: it releases what it holds and is
not given, and acquires what it is given once the key is free.

1. **Quotas.** With P partitions and N live nodes, each node may hold ⌊P/N⌋ and
   P mod N of them one more: those holding more than ⌊P/N⌋ already, then the others by
   `rank`, a hash of the node id alone. Settled, no two nodes differ by more than one
   partition; and the remainder never pulls a partition back to a node that returns
   empty (with 7 partitions and 2 nodes, the node that kept 7 keeps 4).
2. **Stickiness.** A live node keeps what it holds, up to its quota. Past its quota it
   gives up the partitions it has held longest (lowest epoch) and keeps those that came
   to it last.
3. **The rest** — partitions no live node holds, and those given up — go by rendezvous
   (highest random weight) score, `score(node, partition) = blake2b(node, partition)`,
   to nodes with room: the (node, partition) pairs in descending score, each taken
   while both are still open. Alone, with room everywhere, this is plain rendezvous
   hashing: each partition to the node that scores it highest.

Why: a stopping node's partitions must move at once — someone must fire their timers —
and they go, as before, to the nodes that score them highest. What changes is the way
back. A restarted pod returns under the same id; pure rendezvous hashing handed it
exactly the partitions that had just left it, so each of them moved twice in one
restart. Here the returning node has room and nothing else does, so it is given what the
others give up, and they give up what they have held longest: never the partitions that
just came to them from it. Every partition moves at most once per restarted pod, the
node still gets its full share, and a joining or leaving node still moves only what it
must (what it held, or its quota). Kafka's sticky assignor keeps owned partitions up to
a quota in the same way; consistent hashing with bounded loads (Mirrokni et al.) is the
same cap over a hash ring.

Nodes of versions before this rule assign by rendezvous score alone, and would leave a
partition unowned that this rule gives them but theirs does not (one new node among two
old ones left 2 of 64 so in the model). So a node says in its key that it assigns this
way (`STICKY`), and `owners` uses plain `rendezvous` for all while any live node does
not say so: during the rolling update that brings this rule, every node agrees, and the
cluster turns sticky once the last old node is gone.

The answer is a fixed point: once every node holds what it is given, each holds exactly
its quota and `assign` gives the same again, so nothing moves until the node set does.
And it holds still while nodes move towards it: a node over its quota only releases
partitions it is not given (its kept ones are its newest, which releasing older ones
does not change, and it stays above ⌊P/N⌋ only if its quota is the larger one), a node
under it only acquires partitions it is given (and keeps them all, and passes ⌊P/N⌋
only if its quota is the larger one), and the score-ordered matching of what remains,
rerun with some of its pairs already taken, yields the rest of the same pairs. So a
node acting on a view that lags by a few of these steps acts on the same answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wheel.model.ids import PartitionId

STICKY = "sticky"
"""What `nodes/<id>` says under "assignment" when its node assigns this way."""


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a partition key, and its create revision (the partition's epoch)."""

    node: str
    epoch: int


def score(node_id: str, partition: int) -> int:
    """The node's rendezvous score for the partition."""
    digest = hashlib.blake2b(
        f"{node_id}\x00{partition}".encode(), digest_size=8, person=b"wheel-hrw"
    ).digest()
    return int.from_bytes(digest, "big")


def rank(node_id: str) -> int:
    """A node's place in line for the larger quotas: a hash of its id alone."""
    digest = hashlib.blake2b(node_id.encode(), digest_size=8, person=b"wheel-quota").digest()
    return int.from_bytes(digest, "big")


def quotas(
    nodes: Iterable[str], partition_count: int, held: Mapping[str, int] | None = None
) -> dict[str, int]:
    """How many partitions each node may hold: ⌊P/N⌋, and one more for P mod N of them —
    first those that `held` says hold more than ⌊P/N⌋ already (none is made to give one
    up only to make room for the remainder), then the others by `rank`."""
    counts = held or {}
    live = set(nodes)
    if not live:
        return {}
    base, extra = divmod(partition_count, len(live))
    order = sorted(
        live, key=lambda node: (counts.get(node, 0) > base, rank(node), node), reverse=True
    )
    return {node: base + (1 if place < extra else 0) for place, node in enumerate(order)}


def assign(
    nodes: Iterable[str], holders: Mapping[PartitionId, Holder], partition_count: int
) -> dict[PartitionId, str]:
    """Every partition's owner among `nodes`, given who holds what now (module doc)."""
    live = set(nodes)
    if not live:
        return {}
    held: dict[str, list[tuple[int, PartitionId]]] = {node: [] for node in live}
    for partition, holder in holders.items():
        if holder.node in held and 0 <= partition < partition_count:
            held[holder.node].append((holder.epoch, partition))
    quota = quotas(live, partition_count, {node: len(mine) for node, mine in held.items()})
    result: dict[PartitionId, str] = {}
    room: dict[str, int] = {}
    for node, mine in held.items():
        kept = sorted(mine, reverse=True)[: quota[node]]  # the newest: what came last stays
        for _, partition in kept:
            result[partition] = node
        room[node] = quota[node] - len(kept)
    open_nodes = [node for node, left in room.items() if left > 0]
    free = [PartitionId(p) for p in range(partition_count) if p not in result]
    pairs = sorted(((score(node, p), node, p) for node in open_nodes for p in free), reverse=True)
    for _, node, partition in pairs:
        if room[node] > 0 and partition not in result:
            result[partition] = node
            room[node] -= 1
    return result


def rendezvous(nodes: Iterable[str], partition_count: int) -> dict[PartitionId, str]:
    """Each partition to the node that scores it highest (ties, vanishingly rare, to the
    larger id): how nodes before `assign` placed partitions."""
    live = sorted(set(nodes))
    if not live:
        return {}
    return {
        PartitionId(p): max(live, key=lambda node: (score(node, p), node))
        for p in range(partition_count)
    }


def owners(
    nodes: Mapping[str, bool], holders: Mapping[PartitionId, Holder], partition_count: int
) -> dict[PartitionId, str]:
    """`assign` when every live node assigns so (`nodes`: each live node, and whether its
    key says `STICKY`), else `rendezvous` for all, as the older nodes among them do."""
    if all(nodes.values()):
        return assign(nodes, holders, partition_count)
    return rendezvous(nodes, partition_count)
