"""A node that lost its session lets go in time, then re-registers and takes its share back;
a node restarted after a kill retires its previous session."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid

import pytest

from tests.integration.coordinator.harness import (
    MEMBER_PARTITIONS,
    SLACK_S,
    Ledger,
    leftovers,
    member_a,
    owned_by,
)
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.membership import Membership
from wheel.coordinator.session import Session
from wheel.local import EtcdServer
from wheel.model.ids import PartitionId


async def test_lost_session_then_rejoin(own_etcd: EtcdServer) -> None:
    layout = Layout(f"member-{uuid.uuid4().hex[:8]}")
    ledger = Ledger()
    etcd = await Etcd.connect(own_etcd.endpoint, timeout_s=2)

    async def acquired(partition: PartitionId, epoch: int) -> bool:
        ledger.acquired("node-a", partition, epoch)
        return True

    async def released(partition: PartitionId) -> None:
        ledger.released("node-a", partition)

    member = Membership(etcd, layout, "node-a", ttl_s=1, on_acquired=acquired,
                        on_released=released, default_partitions=MEMBER_PARTITIONS)  # fmt: skip
    running = asyncio.create_task(member.run())
    everything = {PartitionId(p): "node-a" for p in range(MEMBER_PARTITIONS)}
    await asyncio.wait_for(owned_by(ledger, everything), 1 + SLACK_S)

    os.kill(own_etcd.process.pid, signal.SIGSTOP)
    await asyncio.wait_for(owned_by(ledger, {}), 1 + SLACK_S)
    os.kill(own_etcd.process.pid, signal.SIGCONT)
    await asyncio.wait_for(owned_by(ledger, everything), 3 * (1 + SLACK_S))
    assert member.sessions >= 2, "it re-registered with a new session"
    first_epochs = {p: e[0] for p, e in ledger.epochs.items()}
    assert all(ledger.epochs[p][-1] > first_epochs[p] for p in everything), "new epochs"

    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    assert ledger.holder == {}, "cancelling hands every partition over"
    await etcd.close()


async def test_a_node_restarted_after_a_kill_takes_its_share_before_its_old_lease_expires(
    own_etcd: EtcdServer,
) -> None:
    """Its previous lease (15 s, as an etcd restart renews it) is seen not kept alive within
    a third of its TTL and the slack, and revoked: the share is back long before 15 s."""
    layout, ledger = Layout(f"member-{uuid.uuid4().hex[:8]}"), Ledger()
    etcd = await Etcd.connect(own_etcd.endpoint, timeout_s=2)
    crashed = await etcd.grant(15)
    await leftovers(etcd, layout, crashed)
    began = asyncio.get_running_loop().time()
    running = asyncio.create_task(member_a(etcd, layout, ledger).run())
    try:
        await asyncio.wait_for(
            owned_by(ledger, {PartitionId(p): "node-a" for p in range(MEMBER_PARTITIONS)}), 15
        )
        took_s = asyncio.get_running_loop().time() - began
        assert took_s < 15 * 2 / 3, f"{took_s:.1f} s: it waited for the lease to run out"
        assert (await etcd.time_to_live(crashed)).remaining_s == -1, "revoked"
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await etcd.close()


async def test_a_live_process_with_the_same_node_id_keeps_its_partitions(
    own_etcd: EtcdServer, caplog: pytest.LogCaptureFixture
) -> None:
    layout, ledger = Layout(f"member-{uuid.uuid4().hex[:8]}"), Ledger()
    etcd = await Etcd.connect(own_etcd.endpoint, timeout_s=2)
    live = await Session.open(etcd, ttl_s=3)  # the other process, keeping its lease alive
    await leftovers(etcd, layout, live.lease_id)
    member = member_a(etcd, layout, ledger)
    running = asyncio.create_task(member.run())
    try:
        await asyncio.wait_for(member.joined.wait(), 15)
        assert any(r.msg == "membership.node_id_in_use" for r in caplog.records)
        assert (await etcd.time_to_live(live.lease_id)).remaining_s > 0, "not revoked"
        assert ledger.holder == {}, "its partitions stay with the live process"
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await live.close()
        await etcd.close()
