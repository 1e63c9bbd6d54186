"""A node restarted after a kill, with no other node up, records its previous session as
lost itself: nobody else saw it go."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

from tests.integration.coordinator.harness import (
    MEMBER_PARTITIONS,
    Ledger,
    leftovers,
    member_a,
    owned_by,
)
from wheel.coordinator.departures import LOST, departures
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.mirror import PrefixMirror
from wheel.local import LocalServices
from wheel.model.ids import PartitionId


async def test_a_node_restarted_after_a_kill_records_its_previous_session_lost(
    local_services: LocalServices,
) -> None:
    layout, ledger = Layout(f"member-{uuid.uuid4().hex[:8]}"), Ledger()
    etcd = await Etcd.connect(local_services.etcd.endpoint)
    crashed = await etcd.grant(6)
    await leftovers(etcd, layout, crashed)
    mirror = PrefixMirror(etcd, layout.departed)
    await mirror.start()
    running = asyncio.create_task(member_a(etcd, layout, ledger).run())
    try:
        await asyncio.wait_for(
            owned_by(ledger, {PartitionId(p): "node-a" for p in range(MEMBER_PARTITIONS)}), 15
        )
        while True:  # until its own take-over of every partition is recorded
            changed = mirror.changed
            found = await departures(etcd, layout)
            if found and len(found[0].taken) == MEMBER_PARTITIONS:
                break
            await asyncio.wait_for(changed.wait(), 10)
        [departure] = found
        assert (departure.node_id, departure.lease, departure.state) == ("node-a", crashed, LOST)
        assert set(departure.held) == set(range(MEMBER_PARTITIONS))
        assert set(departure.taken.values()) == {"node-a"}, "taken back by its next session"
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await mirror.stop()
        await etcd.delete_prefix(layout.root)
        await etcd.close()
