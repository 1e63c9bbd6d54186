"""Rendezvous hashing against its definition: highest score wins, minimal moves, balance."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wheel.coordinator.hrw import assignment, owner, score, share

NODES = st.lists(st.text(alphabet="abcdefgh0123456789-", min_size=1, max_size=12), min_size=1,
                 max_size=8, unique=True)  # fmt: skip
P = 64


@given(NODES)
def test_each_partition_goes_to_the_highest_score(nodes: list[str]) -> None:
    for partition, chosen in assignment(nodes, P).items():
        assert all(score(chosen, partition) >= score(other, partition) for other in nodes)


@given(NODES, st.text(alphabet="xyz", min_size=1, max_size=5))
def test_a_joining_node_takes_only_what_it_wins(nodes: list[str], newcomer: str) -> None:
    before = assignment(nodes, P)
    after = assignment([*nodes, newcomer], P)
    moved = {p for p in before if before[p] != after[p]}
    assert all(after[p] == newcomer for p in moved), "nothing moves between old nodes"


@given(NODES)
def test_a_leaving_node_gives_away_only_its_own(nodes: list[str]) -> None:
    leaving = nodes[0]
    before = assignment(nodes, P)
    after = assignment(nodes[1:], P)
    for partition, held in before.items():
        if held != leaving:
            assert after[partition] == held


@given(NODES)
def test_shares_partition_the_space(nodes: list[str]) -> None:
    shares = [share(n, nodes, P) for n in nodes]
    assert sum(len(s) for s in shares) == P
    assert set().union(*shares) == set(range(P))


def test_the_assignment_is_balanced_enough() -> None:
    nodes = [f"wheel-scheduler-{n}" for n in range(5)]
    counts = [len(share(n, nodes, 256)) for n in nodes]
    assert min(counts) >= 30
    assert max(counts) <= 75


def test_no_nodes_no_owner() -> None:
    assert owner(3, []) is None
    assert assignment([], 8) == {}
