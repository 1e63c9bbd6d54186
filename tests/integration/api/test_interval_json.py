"""Interval schedules through the JSON gateway (it follows the proto): created, previewed
and refused with the field named, as Connect clients see them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.integration.nodes import NodeFactory
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    started = await start_node(http_listen="127.0.0.1:0")
    await started.ready.wait()
    return started


@pytest.fixture
async def http(node: SchedulerNode) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(f"http://{node.dashboard_address}") as session:
        yield session


async def test_an_interval_job_over_json(
    node: SchedulerNode, store: Store, http: aiohttp.ClientSession
) -> None:
    tenant = await store.tenants.create("json-interval")
    _, token = await store.tenants.create_token(tenant.id, "json")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    every = {"every": "5400s", "timeZone": "Europe/London", "intervalDst": "INTERVAL_DST_WALL",
             "anchor": "2026-01-05T09:00:00Z"}  # fmt: skip
    async with http.post("/wheel.v1.Jobs/CreateJob", headers=headers, json={
        "name": "sync", "taskType": "crm.sync", "schedule": {"every": every}, "preview": 2,
    }) as answer:  # fmt: skip
        assert answer.status == 200, await answer.text()
        created = await answer.json()
    assert created["job"]["schedule"]["every"]["every"] == "5400s"
    assert created["job"]["schedule"]["every"]["intervalDst"] == "INTERVAL_DST_WALL"
    assert len(created["nextRuns"]) == 2
    assert all(run["wallTime"][14:16] in ("00", "30") for run in created["nextRuns"])

    async with http.post("/wheel.v1.Jobs/CreateJob", headers=headers, json={
        "name": "bad", "taskType": "t", "schedule": {"every": {"every": "0s"}},
    }) as answer:  # fmt: skip
        assert answer.status == 400
        refused = await answer.json()
    assert refused["message"].startswith("schedule.every.every: ")
