"""A node on a Postgres without a synchronous standby says so, or refuses to start if told to.

The tests' Postgres is a single server: a job it acknowledges lives on one disk.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from click.testing import CliRunner

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.helpers import scrape
from wheel.cli.cluster import nodes
from wheel.client import AsyncClient
from wheel.errors import ConfigError
from wheel.store import Store


async def test_a_single_server_is_read_as_one_disk(store: Store) -> None:
    reading = await store.durability.read()
    assert reading.standby_names == ""
    assert reading.synchronous_standbys == 0
    assert reading.problem is not None
    assert reading.problem.startswith("no synchronous standby")


async def test_a_node_told_to_require_a_synchronous_standby_refuses_to_start(
    start_node: NodeFactory,
) -> None:
    with pytest.raises(ConfigError) as refused:
        await start_node(require_synchronous_standby=True)
    assert refused.value.field == "require_synchronous_standby"
    assert "no synchronous standby" in str(refused.value)


async def test_otherwise_it_serves_and_says_so_in_its_listing_and_metrics(
    start_node: NodeFactory, token: str
) -> None:
    node = await start_node(metrics_listen="127.0.0.1:0")
    samples = await asyncio.to_thread(scrape, node.metrics_address)
    assert samples["wheel_postgres_synchronous_standby{}"] == 0
    async with AsyncClient(node.address, token=token) as client:
        deadline = time.monotonic() + 30
        while True:  # a node joins, then publishes what it tells the cluster every second
            listed = await client.nodes()
            if (listed and listed[0].durability) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
    assert [item.node_id for item in listed] == [node.config.node_id]
    assert listed[0].durability is not None
    assert listed[0].durability.startswith("no synchronous standby")
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}
    # The node serves from this test's loop: the blocking CLI runs in a thread.
    shown = await asyncio.to_thread(CliRunner().invoke, nodes, [], env=env)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())  # as wrapped to the terminal
    assert "at risk" in text
    assert "warning: no synchronous standby (synchronous_standby_names is empty)" in text
