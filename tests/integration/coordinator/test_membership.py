"""A node that lost its session lets go in time, then re-registers and takes its share back."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid

from tests.integration.coordinator.harness import SLACK_S, Ledger
from wheel.coordinator import hrw
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.membership import Membership
from wheel.local import EtcdServer
from wheel.model.ids import PartitionId

PARTITIONS = 16


async def owned_by(ledger: Ledger, expected: dict[PartitionId, str]) -> None:
    while ledger.holder != expected:
        await ledger.changed.wait()


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
                        on_released=released, default_partitions=PARTITIONS)  # fmt: skip
    running = asyncio.create_task(member.run())
    everything = hrw.assignment(["node-a"], PARTITIONS)
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
