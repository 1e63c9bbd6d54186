"""Departures with a real etcd: a lost or stopped node stays on record, with its takers."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.coordinator.harness import SLACK_S, TTL_S, Ledger, Node, converged
from wheel.coordinator.departures import (
    LEFT,
    LOST,
    Departure,
    Takeovers,
    add_takers,
    departed_key,
    departures,
    record,
)
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.mirror import PrefixMirror
from wheel.local import LocalServices


@pytest.fixture
def layout() -> Layout:
    return Layout(f"test-{uuid.uuid4().hex[:8]}")


async def _until(mirror: PrefixMirror, etcd: Etcd, layout: Layout,
                 done: Callable[[list[Departure]], bool]) -> list[Departure]:  # fmt: skip
    """The departures once `done` holds of them (re-read at every change of the prefix)."""
    while True:
        changed = mirror.changed
        found = await departures(etcd, layout)
        if done(found):
            return found
        await changed.wait()


async def _cluster(endpoint: str, layout: Layout, ledger: Ledger, count: int) -> list[Node]:
    nodes = [Node(endpoint, layout, f"node-{n}", ledger) for n in range(count)]
    for node in nodes:
        await node.start()
    await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
    return nodes


async def test_a_node_whose_lease_is_revoked_is_recorded_lost_with_its_takers(
    local_services: LocalServices, layout: Layout
) -> None:
    ledger = Ledger()
    endpoint = local_services.etcd.endpoint
    nodes = await _cluster(endpoint, layout, ledger, 3)
    etcd = await Etcd.connect(endpoint)
    mirror = PrefixMirror(etcd, layout.departed)
    await mirror.start()
    try:
        victim = nodes.pop()
        held = set(victim.ownership.held)
        lease = victim.session.lease_id
        assert held
        before = datetime.now(UTC)
        await victim.crash()
        await etcd.revoke(lease)  # what etcd does once its TTL runs out, without the wait
        await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
        takers = {p: ledger.holder[p] for p in held}

        def complete(found: list[Departure]) -> bool:
            return any(d.lease == lease and dict(d.taken) == takers for d in found)

        found = await asyncio.wait_for(_until(mirror, etcd, layout, complete), SLACK_S)
        [departure] = found
        assert departure.node_id == victim.name
        assert departure.state == LOST
        assert before <= departure.gone_at <= datetime.now(UTC)
        assert set(departure.held) == held
        assert set(takers.values()) <= {"node-0", "node-1"}
        kv = await etcd.get(departed_key(layout, victim.name, lease))
        assert kv is not None
        assert kv.lease, "the record lives under a lease of its own"
        assert (await etcd.time_to_live(kv.lease)).granted_s == 3600
        for node in nodes:
            await asyncio.wait_for(node.ownership.takeovers.idle.wait(), SLACK_S)
        counted = [node.ownership.takeovers.recorded_lost for node in nodes]
        assert sorted(counted) == [0, 1], "one survivor records (and counts) the loss"
    finally:
        await mirror.stop()
        for node in nodes:
            await node.stop()
        await etcd.close()


async def test_a_node_that_stops_cleanly_is_recorded_as_left(
    local_services: LocalServices, layout: Layout
) -> None:
    ledger = Ledger()
    endpoint = local_services.etcd.endpoint
    nodes = await _cluster(endpoint, layout, ledger, 2)
    etcd = await Etcd.connect(endpoint)
    mirror = PrefixMirror(etcd, layout.departed)
    await mirror.start()
    try:
        leaving = nodes.pop()
        held = set(leaving.ownership.held)
        lease = leaving.session.lease_id
        await leaving.stop()
        await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)

        def complete(found: list[Departure]) -> bool:
            return any(d.lease == lease and set(d.taken) == held for d in found)

        [departure] = await asyncio.wait_for(_until(mirror, etcd, layout, complete), SLACK_S)
        assert departure.state == LEFT
        assert set(departure.taken.values()) == {"node-0"}
    finally:
        await mirror.stop()
        for node in nodes:
            await node.stop()
        await etcd.close()


async def test_partitions_moved_to_a_joining_node_are_no_departure(
    local_services: LocalServices, layout: Layout
) -> None:
    ledger = Ledger()
    endpoint = local_services.etcd.endpoint
    nodes = await _cluster(endpoint, layout, ledger, 1)
    joining = Node(endpoint, layout, "node-1", ledger)
    await joining.start()
    nodes.append(joining)
    try:
        await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
        assert joining.ownership.held
        for node in nodes:  # every write it meant to make is made (or found unneeded)
            await asyncio.wait_for(node.ownership.takeovers.idle.wait(), SLACK_S)
        etcd = nodes[0].etcd
        assert await departures(etcd, layout) == []
    finally:
        for node in nodes:
            await node.stop()


async def test_takers_writing_at_once_do_not_clobber_each_other(
    local_services: LocalServices, layout: Layout
) -> None:
    etcd = await Etcd.connect(local_services.etcd.endpoint)
    try:
        gone = Departure("node-x", 0xABC, LOST, datetime.now(UTC) - timedelta(seconds=5))
        assert await record(etcd, layout, gone)
        assert not await record(etcd, layout, gone), "a second survivor writes nothing"
        await asyncio.gather(
            *(add_takers(etcd, layout, "node-x", 0xABC, {p: f"node-{p % 3}"}) for p in range(12))
        )
        [found] = await departures(etcd, layout)
        assert dict(found.taken) == {p: f"node-{p % 3}" for p in range(12)}
        assert found.gone_at == gone.gone_at, "takers keep when it went"
    finally:
        await etcd.close()


async def test_a_stale_compare_and_set_writes_nothing(
    local_services: LocalServices, layout: Layout
) -> None:
    etcd = await Etcd.connect(local_services.etcd.endpoint)
    key = f"{layout.root}cas"
    try:
        assert await etcd.put_if_modified_at(key, b"1", 0, lease=0)
        assert not await etcd.put_if_modified_at(key, b"2", 0, lease=0), "exists already"
        kv = await etcd.get(key)
        assert kv is not None
        assert await etcd.put_if_modified_at(key, b"3", kv.mod_revision, lease=0)
        assert not await etcd.put_if_modified_at(key, b"4", kv.mod_revision, lease=0)
        now = await etcd.get(key)
        assert now is not None
        assert now.value == b"3"
    finally:
        await etcd.delete_prefix(layout.root)
        await etcd.close()


async def test_a_taker_that_never_saw_the_holder_finds_it_among_recent_departures(
    local_services: LocalServices, layout: Layout
) -> None:
    etcd = await Etcd.connect(local_services.etcd.endpoint)
    now = datetime.now(UTC)
    recent = Departure("node-x", 0x1, LEFT, now - timedelta(seconds=5), held=(1, 2))
    old = Departure("node-y", 0x2, LOST, now - timedelta(minutes=30), held=(3,))
    takeovers = Takeovers(etcd, layout, "node-a", 0x3)
    takeovers.start()
    try:
        for departure in (recent, old):
            assert await record(etcd, layout, departure)
        for partition in (1, 3, 7):  # no key of theirs seen: its watch missed them
            takeovers.acquired(partition)
        await asyncio.wait_for(takeovers.idle.wait(), SLACK_S)
        found = {d.node_id: d for d in await departures(etcd, layout)}
        assert dict(found["node-x"].taken) == {1: "node-a"}
        assert dict(found["node-y"].taken) == {}, "too old to be this take-over"
        assert set(found) == {"node-x", "node-y"}, "a partition nobody held is no departure"
    finally:
        await takeovers.stop()
        await etcd.delete_prefix(layout.root)
        await etcd.close()


async def test_a_partition_handed_over_earlier_is_not_listed_held_when_its_giver_is_lost(
    local_services: LocalServices, layout: Layout
) -> None:
    etcd = await Etcd.connect(local_services.etcd.endpoint)
    giver = await etcd.grant(60)
    await etcd.put(layout.node("node-b"), b"{}", lease=giver)
    registration = await etcd.get(layout.node("node-b"))
    assert registration is not None
    takeovers = Takeovers(etcd, layout, "node-a", 0x3)
    takeovers.start()
    try:
        takeovers.nodes_seen({registration.key: registration})
        takeovers.partitions_seen([(5, "node-b", giver), (6, "node-b", giver)])
        takeovers.acquired(5)  # a rebalance: node-b is still registered
        await asyncio.wait_for(takeovers.idle.wait(), SLACK_S)
        await etcd.revoke(giver)  # then node-b is lost, holding 6 only
        takeovers.nodes_seen({})
        await asyncio.wait_for(takeovers.idle.wait(), SLACK_S)
        [lost] = await departures(etcd, layout)
        assert (lost.node_id, lost.state) == ("node-b", LOST)
        assert set(lost.held) == {6}, "5 was handed over while node-b was registered"
        assert dict(lost.taken) == {}
    finally:
        await takeovers.stop()
        await etcd.delete_prefix(layout.root)
        await etcd.close()
