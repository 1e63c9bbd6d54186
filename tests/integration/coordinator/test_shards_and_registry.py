"""`wheel shards` shows owners as etcd has them; executors are found by watching."""

from __future__ import annotations

import asyncio
import json
import uuid

from click.testing import CliRunner

from tests.integration.coordinator.harness import SLACK_S, TTL_S, Ledger, Node, converged
from wheel.cli.main import cli
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.registry import Directory, ExecutorInfo, register_executor
from wheel.coordinator.session import Session
from wheel.local import LocalServices


async def test_shards_lists_every_partition_with_its_owner(local_services: LocalServices) -> None:
    layout = Layout(f"shards-{uuid.uuid4().hex[:8]}")
    ledger = Ledger()
    nodes = [Node(local_services.etcd.endpoint, layout, f"node-{n}", ledger) for n in range(2)]
    for node in nodes:
        await node.start()
    await asyncio.wait_for(converged(ledger, nodes), TTL_S + SLACK_S)
    args = ["shards", "--etcd", local_services.etcd.endpoint, "--cluster", layout.cluster]
    result = await asyncio.to_thread(CliRunner().invoke, cli, [*args, "--output", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert len(rows) == 32
    assert {row["partition"]: row["node_id"] for row in rows} == dict(ledger.holder)
    epochs = {p: e for node in nodes for p, e in node.ownership.held.items()}
    assert {row["partition"]: row["epoch"] for row in rows} == epochs
    table = await asyncio.to_thread(CliRunner().invoke, cli, args)
    assert table.exit_code == 0, table.output
    assert "32 of 32 partitions held" in table.output
    for node in nodes:
        await node.stop()


async def test_shards_of_a_cluster_no_node_runs_in_says_so(local_services: LocalServices) -> None:
    args = ["shards", "--etcd", local_services.etcd.endpoint, "--cluster", "no-such-cluster"]
    result = await asyncio.to_thread(CliRunner().invoke, cli, args)
    assert result.exit_code == 1
    assert "no node is in cluster 'no-such-cluster'" in result.output
    assert "check --cluster" in result.output


async def test_executors_are_found_and_forgotten_with_their_lease(
    local_services: LocalServices,
) -> None:
    layout = Layout(f"registry-{uuid.uuid4().hex[:8]}")
    etcd = await Etcd.connect(local_services.etcd.endpoint)
    directory = Directory(etcd, layout)
    await directory.start()
    session = await Session.open(etcd, ttl_s=1)
    info = ExecutorInfo("ex-1", "127.0.0.1:7000", ("default", "slow"), ("report",), 8)
    await register_executor(etcd, layout, info, session)
    while directory.executors() != [info]:
        await directory.next_change()
    await session.close()
    while directory.executors():
        await directory.next_change()
    await directory.stop()
    await etcd.close()
