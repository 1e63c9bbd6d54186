"""The sticky bounded-load assignment against its definition, and nodes moving towards it.

`Cluster` is a model of what etcd and the nodes do: a partition key is created only if
absent, with a new epoch; each step one node releases a partition it is not given or
acquires a free one it is given, as `Ownership` does.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter

from hypothesis import example, given, settings
from hypothesis import strategies as st

from wheel.coordinator.assignment import Holder, assign, owners, quotas, rendezvous
from wheel.model.ids import PartitionId

NODES = st.lists(st.text(alphabet="abcdefgh0123456789-", min_size=1, max_size=12), min_size=1,
                 max_size=8, unique=True)  # fmt: skip
P = 64


class Cluster:
    """Partition keys and live nodes; `settle` moves partitions until nothing is left to do."""

    def __init__(self, count: int, seed: int) -> None:
        self.count = count
        self.nodes: set[str] = set()
        self.old: set[str] = set()
        self.holders: dict[PartitionId, Holder] = {}
        self.moves: Counter[PartitionId] = Counter()
        self._last: dict[PartitionId, str] = {}
        self._revision = itertools.count(1)
        self._rng = random.Random(seed)

    def steps(self) -> list[tuple[str, PartitionId, bool]]:
        """Every step some node would take now: (node, partition, acquire?). A node in
        `old` is of a version before sticky assignment: it places by rendezvous alone."""
        sticky = owners({n: n not in self.old for n in self.nodes}, self.holders, self.count)
        plain = rendezvous(self.nodes, self.count)
        found = []
        for node in sorted(self.nodes):
            target = plain if node in self.old else sticky
            found += [(node, p, False) for p, h in sorted(self.holders.items())
                      if h.node == node and target[p] != node]  # fmt: skip
            found += [(node, p, True) for p in sorted(target)
                      if target[p] == node and p not in self.holders]  # fmt: skip
        return found

    def settle(self) -> None:
        while steps := self.steps():
            node, partition, acquire = self._rng.choice(steps)
            if not acquire:
                del self.holders[partition]
                continue
            self.holders[partition] = Holder(node, next(self._revision))
            if self._last.get(partition, node) != node:
                self.moves[partition] += 1
            self._last[partition] = node

    def stop(self, node: str) -> None:
        """A graceful stop: its keys deleted, then its node key."""
        self.holders = {p: h for p, h in self.holders.items() if h.node != node}
        self.nodes.discard(node)

    def owned(self) -> dict[PartitionId, str]:
        return {p: h.node for p, h in self.holders.items()}


def holdings(nodes: list[str], count: int) -> st.SearchStrategy[dict[PartitionId, Holder]]:
    """Any partition keys: held by listed nodes or by one gone, each with its own epoch."""
    holders = st.sampled_from([*nodes, "gone"])
    return st.dictionaries(st.integers(0, count - 1), holders).flatmap(
        lambda held: st.permutations(range(1, len(held) + 1)).map(
            lambda epochs: {
                PartitionId(p): Holder(n, e) for (p, n), e in zip(held.items(), epochs, strict=True)
            }
        )
    )


@given(NODES.flatmap(lambda nodes: st.tuples(st.just(nodes), holdings(nodes, P))))
def test_every_partition_goes_to_a_live_node_within_its_quota(
    case: tuple[list[str], dict[PartitionId, Holder]],
) -> None:
    nodes, holders = case
    given_ = assign(nodes, holders, P)
    assert sorted(given_) == list(range(P))
    counts = Counter(given_.values())
    held = Counter(h.node for h in holders.values())
    assert {n: counts[n] for n in nodes} == quotas(nodes, P, held)
    assert max(counts.values()) - min(counts[n] for n in nodes) <= 1


@given(NODES.flatmap(lambda nodes: st.tuples(st.just(nodes), holdings(nodes, P))))
def test_a_node_within_its_quota_keeps_what_it_holds_and_one_past_it_its_newest(
    case: tuple[list[str], dict[PartitionId, Holder]],
) -> None:
    nodes, holders = case
    given_ = assign(nodes, holders, P)
    quota = quotas(nodes, P, Counter(h.node for h in holders.values()))
    for node in nodes:
        mine = sorted((h.epoch, p) for p, h in holders.items() if h.node == node)
        kept = [p for _, p in mine if given_[p] == node]
        assert kept == [p for _, p in mine[-quota[node] :]] if quota[node] else kept == []


@given(NODES.flatmap(lambda nodes: st.tuples(st.just(nodes), holdings(nodes, P))))
def test_the_answer_is_a_fixed_point(case: tuple[list[str], dict[PartitionId, Holder]]) -> None:
    nodes, holders = case
    given_ = assign(nodes, holders, P)
    kept = {p: h for p, h in holders.items() if h.node == given_[p]}
    taken = {p: Holder(n, 10_000 + p) for p, n in given_.items() if p not in kept}
    assert assign(nodes, kept | taken, P) == given_


@settings(deadline=None)
@given(
    NODES.flatmap(lambda nodes: st.tuples(st.just(nodes), holdings(nodes, P))),
    st.randoms(use_true_random=False),
)
def test_the_answer_holds_still_while_nodes_move_towards_it(
    case: tuple[list[str], dict[PartitionId, Holder]], rng: random.Random
) -> None:
    """What lets a node act on a view a few steps behind: every state on the way gives the
    same answer (a gone node's keys expire on the way too)."""
    nodes, holders = case
    target = assign(nodes, holders, P)
    steps = [(p, False) for p, h in holders.items() if target[p] != h.node]
    steps += [(p, True) for p in target if p not in holders or holders[p].node != target[p]]
    rng.shuffle(steps)
    now, revision = dict(holders), 100_000
    for partition, acquire in steps:
        if acquire and partition not in now:
            revision += 1
            now[partition] = Holder(target[partition], revision)
        elif not acquire and partition in now and now[partition].node != target[partition]:
            del now[partition]
        assert assign(nodes, now, P) == target


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(1, 48), st.integers(0, 2**32))
@example(size=2, count=1, seed=0)  # remainders given by rank alone pulled these back
@example(size=2, count=7, seed=0)
def test_a_rolling_update_moves_each_partition_at_most_once_per_restarted_node(
    size: int, count: int, seed: int
) -> None:
    cluster = Cluster(count, seed)
    names = [f"wheel-scheduler-{n}" for n in range(size)]
    for name in names:
        cluster.nodes.add(name)
        cluster.settle()
    for name in reversed(names):  # a StatefulSet: highest ordinal first, one at a time
        before = Counter(cluster.moves)
        cluster.stop(name)
        cluster.settle()
        cluster.nodes.add(name)  # back, same id
        cluster.settle()
        moved = cluster.moves - before
        assert max(moved.values(), default=0) <= 1, f"restarting {name} moved {moved}"
        counts = Counter(cluster.owned().values())
        assert sum(counts.values()) == count
        assert max(counts[n] for n in names) - min(counts[n] for n in names) <= 1, "balanced"


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5), st.integers(1, 48), st.integers(0, 2**32))
@example(size=3, count=64, seed=0)  # one new node among two old left 2 unowned
def test_the_update_that_brings_sticky_assignment_leaves_no_partition_unowned(
    size: int, count: int, seed: int
) -> None:
    cluster = Cluster(count, seed)
    names = [f"wheel-scheduler-{n}" for n in range(size)]
    cluster.old.update(names)
    for name in names:
        cluster.nodes.add(name)
        cluster.settle()
    for name in reversed(names):
        cluster.stop(name)
        cluster.settle()
        cluster.old.discard(name)
        cluster.nodes.add(name)
        cluster.settle()
        assert len(cluster.holders) == count, f"with {name} new, some partition is unowned"
    counts = Counter(cluster.owned().values())
    assert max(counts.values()) - min(counts[n] for n in names) <= 1, "balanced once all new"


@settings(max_examples=50, deadline=None)
@given(NODES, st.integers(0, 2**32))
def test_a_leaving_node_gives_away_only_its_own(nodes: list[str], seed: int) -> None:
    cluster = Cluster(P, seed)
    cluster.nodes.update(nodes)
    cluster.settle()
    before = cluster.owned()
    cluster.stop(nodes[0])
    cluster.settle()
    after = cluster.owned()
    assert all(after[p] == n for p, n in before.items() if n != nodes[0])


@settings(max_examples=50, deadline=None)
@given(NODES, st.text(alphabet="xyz", min_size=1, max_size=5), st.integers(0, 2**32))
def test_a_joining_node_takes_only_its_quota(nodes: list[str], newcomer: str, seed: int) -> None:
    cluster = Cluster(P, seed)
    cluster.nodes.update(nodes)
    cluster.settle()
    before = cluster.owned()
    cluster.nodes.add(newcomer)
    cluster.settle()
    after = cluster.owned()
    after_counts = Counter(after.values())
    moved = {p for p in before if after[p] != before[p]}
    assert all(after[p] == newcomer for p in moved), "nothing moves between the others"
    assert len(moved) == after_counts[newcomer] == P // (len(nodes) + 1)


@given(NODES, st.integers(0, 300))
def test_quotas_add_up_and_differ_by_one_at_most(nodes: list[str], count: int) -> None:
    quota = quotas(nodes, count)
    assert sum(quota.values()) == count
    assert max(quota.values()) - min(quota.values()) <= 1
    assert quotas(reversed(nodes), count) == quota, "the order nodes are listed in is no matter"


def test_no_nodes_no_owner() -> None:
    assert quotas([], 8) == {}
    assert assign([], {PartitionId(0): Holder("gone", 1)}, 8) == {}
