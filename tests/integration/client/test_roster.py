"""The roster through real nodes: a node whose session is lost is listed as lost, with when
it went and which node took each of its partitions; a node that stops cleanly as left."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from tests.integration.nodes import NodeFactory
from wheel.client import AsyncClient, NodeState, Roster
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.mirror import PrefixMirror
from wheel.scheduler.node import SchedulerNode

WAIT_S = 30.0


async def _roster_once(client: AsyncClient, mirror: PrefixMirror, done: object) -> Roster:
    """The roster once `done(roster)` holds, read again at every change of `departed/`."""
    while True:
        changed = mirror.changed
        roster = await client.roster()
        if done(roster):  # type: ignore[operator]
            return roster
        await changed.wait()


def _held(node: SchedulerNode) -> set[int]:
    """What a ready node holds: its share (a node is ready once it holds it)."""
    assert node.ready.is_set()
    assert node.membership is not None
    ownership = node.membership.ownership
    assert ownership is not None
    return set(ownership.held)


async def test_a_node_whose_lease_is_revoked_shows_as_lost_with_its_takers(
    start_node: NodeFactory, token: str
) -> None:
    first = await start_node("node-a")
    second = await start_node("node-b")
    await asyncio.gather(first.ready.wait(), second.ready.wait())
    etcd = await Etcd.connect(first.config.etcd_endpoint)
    mirror = PrefixMirror(etcd, Layout(first.config.cluster).departed)
    await mirror.start()
    try:
        held = _held(second)
        assert held
        assert second.membership is not None
        assert second.membership.session is not None
        lease = second.membership.session.lease_id
        before = datetime.now(UTC)
        await etcd.revoke(lease)  # what etcd does when a killed node's TTL runs out

        async with AsyncClient(first.address, token=token) as client:

            def taken(roster: Roster) -> bool:
                return any(
                    n.node_id == "node-b" and set(n.taken) == held and all(n.taken.values())
                    for n in roster.departed
                )

            roster = await asyncio.wait_for(_roster_once(client, mirror, taken), WAIT_S)
        [gone] = [n for n in roster.departed if n.node_id == "node-b"]
        assert gone.state is NodeState.LOST
        assert gone.gone_at is not None
        assert before <= gone.gone_at <= datetime.now(UTC)
        assert gone.partitions == len(held)
        # node-a takes them at once; node-b, back with a new session, may take some itself.
        assert set(gone.taken.values()) <= {"node-a", "node-b"}
        assert "node-a" in gone.takers()
    finally:
        await mirror.stop()
        await etcd.close()


async def test_a_node_that_stops_cleanly_shows_as_left_and_is_not_expected(
    start_node: NodeFactory, token: str
) -> None:
    first = await start_node("node-a")
    second = await start_node("node-b")
    await asyncio.gather(first.ready.wait(), second.ready.wait())
    etcd = await Etcd.connect(first.config.etcd_endpoint)
    mirror = PrefixMirror(etcd, Layout(first.config.cluster).departed)
    await mirror.start()
    try:
        held = _held(second)
        assert held
        await second.stop()
        async with AsyncClient(first.address, token=token) as client:

            def taken(roster: Roster) -> bool:
                return any(set(n.taken) == held and all(n.taken.values())
                           for n in roster.departed)  # fmt: skip

            roster = await asyncio.wait_for(_roster_once(client, mirror, taken), WAIT_S)
        [gone] = roster.departed
        assert gone.state is NodeState.LEFT
        assert gone.takers() == {"node-a": len(held)}
        assert [n.node_id for n in roster.nodes] == ["node-a"]
        assert roster.expected == 1, "a node that left is not missed"
        assert roster.lost == ()
    finally:
        await mirror.stop()
        await etcd.close()
