"""A node's Prometheus metrics, scraped over HTTP after real work."""

from __future__ import annotations

import asyncio

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.helpers import at, create_job, scrape, tenant
from tests.integration.scheduler.scripted_executor import connected
from wheel.store import Store


async def test_metrics_count_the_work_and_show_the_state(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node(metrics_listen="127.0.0.1:0")
    executor = await connected(node)
    owner = await tenant(store)
    await create_job(store, owner, at(1.0))
    later = await create_job(store, owner, at(45.0))  # in the loaded window, not yet due
    await executor.wait_for(lambda: len(executor.accepted) == 1)
    samples = await asyncio.to_thread(scrape, node.metrics_address)
    assert samples["wheel_executions_total{outcome=succeeded}"] == 1
    assert samples["wheel_executions_finished_total{status=succeeded}"] == 1
    assert samples["wheel_firing_lateness_seconds_count{}"] == 1
    assert samples["wheel_claim_batch_size_count{}"] >= 1
    assert samples["wheel_record_seconds_count{}"] >= 1
    assert samples["wheel_owned_partitions{}"] == 8
    assert samples["wheel_dispatch_credit{pool=default}"] == executor.capacity
    assert samples["wheel_upcoming{pool=default,within=1m}"] == 1, later.id
    assert samples["wheel_upcoming{pool=default,within=5m}"] == 1
    assert samples["wheel_wheel_timers{}"] >= 1
    assert "wheel_clock_offset_seconds{}" in samples
    await executor.stop()
