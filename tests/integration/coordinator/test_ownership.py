"""Ownership under churn with a real etcd: never two owners, every partition owned again soon."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from dataclasses import dataclass, field

import pytest

from tests.integration.store import factories as make
from wheel.coordinator import hrw
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.ownership import Ownership, partition_count
from wheel.coordinator.session import Session
from wheel.local import EtcdServer, LocalServices
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.store import Store

PARTITIONS = 32
TTL_S = 1
SLACK_S = 4.0


@dataclass
class Ledger:
    """Who believes they own what, from the nodes' own callbacks; fails on a double owner."""

    holder: dict[PartitionId, str] = field(default_factory=dict)
    epochs: dict[PartitionId, list[int]] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def acquired(self, node: str, partition: PartitionId, epoch: int) -> None:
        assert partition not in self.holder, (
            f"{node} acquired {partition} while {self.holder[partition]} holds it"
        )
        self.holder[partition] = node
        self.epochs.setdefault(partition, []).append(epoch)
        self._changed()

    def released(self, node: str, partition: PartitionId) -> None:
        assert self.holder.pop(partition) == node
        self._changed()

    def _changed(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class Node:
    def __init__(self, endpoint: str, layout: Layout, name: str, ledger: Ledger) -> None:
        self.endpoint, self.layout, self.name, self.ledger = endpoint, layout, name, ledger

    async def start(self) -> None:
        self.etcd = await Etcd.connect(self.endpoint)
        self.session = await Session.open(self.etcd, ttl_s=TTL_S)
        count = await partition_count(self.etcd, self.layout, default=PARTITIONS)

        async def acquired(partition: PartitionId, epoch: int) -> bool:
            self.ledger.acquired(self.name, partition, epoch)
            return True

        async def released(partition: PartitionId) -> None:
            self.ledger.released(self.name, partition)

        self.ownership = Ownership(
            self.etcd, self.layout, self.name, partitions=count, session=self.session,
            on_acquired=acquired, on_released=released,
        )  # fmt: skip
        await self.ownership.start()

    async def stop(self) -> None:
        await self.ownership.stop(hand_over=True)
        await self.session.close()
        await self.etcd.close()

    async def crash(self) -> None:
        """Gone without cleanup: no hand-over, no revoke; its lease runs out in etcd."""
        await self.ownership.stop(hand_over=False)
        for partition in list(self.ownership.held):
            self.ledger.released(self.name, partition)  # it is dead: it believes nothing
        self.session._task.cancel()  # type: ignore[union-attr]
        with contextlib.suppress(asyncio.CancelledError):
            await self.session._task  # type: ignore[misc]
        await self.etcd.close()


async def converged(ledger: Ledger, nodes: list[Node]) -> None:
    """Until every partition is held by its rendezvous owner among `nodes`."""
    want = hrw.assignment([n.name for n in nodes], PARTITIONS)
    while ledger.holder != want:
        await ledger.changed.wait()


@pytest.fixture
def layout() -> Layout:
    return Layout(f"test-{uuid.uuid4().hex[:8]}")


async def test_one_three_five_two_nodes(local_services: LocalServices, layout: Layout) -> None:
    ledger = Ledger()
    endpoint = local_services.etcd.endpoint
    nodes: list[Node] = []
    for target in (1, 3, 5):
        while len(nodes) < target:
            node = Node(endpoint, layout, f"node-{len(nodes)}", ledger)
            await node.start()
            nodes.append(node)
        await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
    for _ in range(3):
        await nodes.pop().stop()
    await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
    moved = {p for p, epochs in ledger.epochs.items() if len(epochs) > 1}
    assert moved, "partitions changed hands"
    assert all(e == sorted(set(e)) for e in ledger.epochs.values()), "epochs only grow"
    for node in nodes:
        await node.stop()
    assert ledger.holder == {}


async def test_a_crashed_node_loses_its_partitions_by_lease_expiry(
    local_services: LocalServices, layout: Layout
) -> None:
    ledger = Ledger()
    endpoint = local_services.etcd.endpoint
    nodes = [Node(endpoint, layout, f"node-{n}", ledger) for n in range(3)]
    for node in nodes:
        await node.start()
    await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
    await nodes.pop().crash()
    await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
    for node in nodes:
        await node.stop()


async def test_acquired_epochs_fence_the_stale_owner_in_postgres(
    local_services: LocalServices, layout: Layout, store: Store
) -> None:
    ledger = Ledger()
    endpoint = local_services.etcd.endpoint
    first = Node(endpoint, layout, "node-a", ledger)
    await first.start()
    await asyncio.wait_for(converged(ledger, [first]), TTL_S + SLACK_S)
    old_epochs = dict(first.ownership.held)
    await store.occurrences.set_epochs(old_epochs, node_id="node-a")
    second = Node(endpoint, layout, "node-b", ledger)
    await second.start()
    await asyncio.wait_for(converged(ledger, [first, second]), TTL_S + SLACK_S)
    moved = {p: e for p, e in second.ownership.held.items()}
    assert moved
    assert await store.occurrences.set_epochs(moved, node_id="node-b") == sorted(moved)
    # node-a, had it not noticed the move, would claim with its old epoch: Postgres refuses.
    partition = min(moved)
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=partition)
    at = make.soon()
    await store.occurrences.insert([make.occurrence(job, at)])
    key = ExecutionKey(job.id, at)
    assert (
        await store.occurrences.claim([key], {partition: old_epochs[partition]}, lease_s=30) == []
    )
    assert (
        await store.occurrences.set_epochs({partition: old_epochs[partition]}, node_id="node-a")
        == []
    )
    claimed = await store.occurrences.claim([key], {partition: moved[partition]}, lease_s=30)
    assert [c.key for c in claimed] == [key]
    for node in (first, second):
        await node.stop()


async def test_a_node_whose_etcd_goes_silent_lets_go_of_everything(
    own_etcd: EtcdServer, layout: Layout
) -> None:
    ledger = Ledger()
    node = Node(own_etcd.endpoint, layout, "node-a", ledger)
    await node.start()
    await asyncio.wait_for(converged(ledger, [node]), TTL_S + SLACK_S)
    os.kill(own_etcd.process.pid, signal.SIGSTOP)
    await node.session.lost.wait()
    while ledger.holder:
        await ledger.changed.wait()
    assert node.ownership.held == {}
    os.kill(own_etcd.process.pid, signal.SIGCONT)
    await node.ownership.stop(hand_over=False)
    await node.etcd.close()


async def test_ownership_survives_an_etcd_restart(own_etcd: EtcdServer, layout: Layout) -> None:
    ledger = Ledger()
    nodes = [Node(own_etcd.endpoint, layout, f"node-{n}", ledger) for n in range(2)]
    for node in nodes:
        await node.start()
    await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
    own_etcd.stop()
    restarted = EtcdServer.start(own_etcd.data_dir, port=own_etcd.port, durable=False)
    try:
        third = Node(restarted.endpoint, layout, "node-2", ledger)
        await third.start()
        nodes.append(third)
        await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
        for node in nodes:
            await node.stop()
    finally:
        restarted.stop()
