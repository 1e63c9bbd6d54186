"""Ownership under churn with a real etcd: never two owners, every partition owned again soon."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid

import pytest

from tests.integration.coordinator.harness import (
    PARTITIONS,
    SLACK_S,
    TTL_S,
    Ledger,
    Node,
    converged,
)
from tests.integration.store import factories as make
from wheel.coordinator.assignment import rendezvous
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout, encode
from wheel.errors import StoreUnavailable
from wheel.local import EtcdServer, LocalServices
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.store import Store


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


async def test_a_failing_callback_is_retried_not_fatal(
    local_services: LocalServices, layout: Layout
) -> None:
    ledger = Ledger()
    node = Node(local_services.etcd.endpoint, layout, "node-a", ledger)
    failures = {PartitionId(0): 2, PartitionId(5): 1}
    record = ledger.acquired

    def flaky(name: str, partition: PartitionId, epoch: int) -> None:
        if failures.get(partition, 0) > 0:
            failures[partition] -= 1
            raise StoreUnavailable("Postgres blinked while writing the epoch")
        record(name, partition, epoch)

    ledger.acquired = flaky  # type: ignore[method-assign]
    await node.start()
    await asyncio.wait_for(converged(ledger, [node]), TTL_S + SLACK_S)
    assert failures == {PartitionId(0): 0, PartitionId(5): 0}
    await node.stop()


async def test_a_node_of_an_older_version_keeps_everyone_on_rendezvous(
    local_services: LocalServices, layout: Layout
) -> None:
    """Its key does not say it assigns sticky: the others place by rendezvous as it does
    (its own share left to it), and turn sticky once it is gone."""
    ledger = Ledger()
    endpoint = local_services.etcd.endpoint
    etcd = await Etcd.connect(endpoint)
    old_lease = await etcd.grant(30)
    await etcd.put(layout.node("node-old"), encode({"node": "node-old"}), lease=old_lease)
    nodes = [Node(endpoint, layout, f"node-{n}", ledger) for n in range(2)]
    for node in nodes:
        await node.start()
    plain = rendezvous(["node-old", *(n.name for n in nodes)], PARTITIONS)
    expected = {p: n for p, n in plain.items() if n != "node-old"}
    while ledger.holder != expected:
        await asyncio.wait_for(ledger.changed.wait(), TTL_S + SLACK_S)
    await etcd.revoke(old_lease)  # the last old node is replaced
    await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
    for node in nodes:
        await node.stop()
    await etcd.close()
