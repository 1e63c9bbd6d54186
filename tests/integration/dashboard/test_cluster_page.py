"""The Cluster page in a real browser, at desktop and phone sizes: a lost node stays on the
page with when it went and who took its partitions, an alert says the cluster is short of
nodes, partition tiles say which number is the epoch, executor credit reads as slots."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from playwright.async_api import Browser, Page, expect

from tests.integration.dashboard.browsing import SHOTS, SIZES, sign_in, tenant_token
from wheel.coordinator.departures import LEFT, LOST, Departure, add_takers, record
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.executor.config import ExecutorConfig
from wheel.executor.executor import Executor
from wheel.executor.tasks import TaskRegistry
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


@pytest.fixture
async def idle_executor(store: Store, node: SchedulerNode) -> AsyncIterator[Executor]:
    registry = TaskRegistry()

    @registry.task("report")
    async def report(context: object) -> None:
        pass

    running = Executor(
        ExecutorConfig(
            executor_id=f"slots-{uuid.uuid4().hex[:6]}",
            nodes=(node.address,),
            pools={"default": 4},
            token=(await store.tenants.create_executor_token("slots"))[1],
        ),
        registry,
    )
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def _departed(node: SchedulerNode) -> tuple[Departure, Departure]:
    """A node lost two minutes ago whose partitions the live node took, and one that left,
    written as the nodes write them (coordinator/departures.py)."""
    layout = Layout(node.config.cluster)
    etcd = await Etcd.connect(node.config.etcd_endpoint)
    now = datetime.now(UTC)
    lost = Departure("node-gone", 0x51, LOST, now - timedelta(minutes=2), "10.0.0.9:7070",
                     held=(0, 1, 2))  # fmt: skip
    left = Departure("node-old", 0x52, LEFT, now - timedelta(minutes=20), held=(3,))
    try:
        for departure in (lost, left):
            assert await record(etcd, layout, departure)
        await add_takers(etcd, layout, "node-gone", 0x51, {0: node.node_id, 1: node.node_id})
        await add_takers(etcd, layout, "node-old", 0x52, {3: node.node_id})
    finally:
        await etcd.close()
    return lost, left


async def _within_width(page: Page, selector: str) -> None:
    width = page.viewport_size["width"] if page.viewport_size else 0
    for box in [await item.bounding_box() for item in await page.locator(selector).all()]:
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= width + 0.5, f"{selector} runs off a {width} px screen"


async def test_a_lost_node_stays_on_the_cluster_page_with_its_takers(
    node: SchedulerNode,
    idle_executor: Executor,
    store: Store,
    browser: Browser,
) -> None:
    lost, _ = await _departed(node)
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "ops")
    for size, viewport in SIZES.items():
        context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
        page = await context.new_page()
        await sign_in(page, base, token)
        await page.goto(f"{base}/cluster")

        alert = page.locator(".lost-alert")
        await expect(alert).to_be_visible()
        await expect(alert).to_contain_text("1 of 2 expected nodes are live")
        gone_at = lost.gone_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        await expect(alert).to_contain_text(
            re.compile(rf"node-gone was lost at {gone_at} \(2 min( \d+ s)? ago\)")
        )
        await expect(page.locator("h2 .expected")).to_have_text("1 of 2 expected live")

        gone = page.locator(".departed li.lost")
        await expect(gone).to_contain_text("node-gone")
        await expect(gone).to_contain_text("3 partitions, taken by")
        await expect(gone).to_contain_text(f"{node.node_id} (2)")
        await expect(gone).to_contain_text("1 not yet")
        left = page.locator(".departed li.left")
        await expect(left).to_contain_text("node-old")
        await expect(left).to_contain_text("left")
        # Lost reads in the alarm colour, left in the muted one: not the same at a glance.
        colours = [await item.evaluate("e => getComputedStyle(e).borderLeftColor")
                   for item in (gone, left)]  # fmt: skip
        assert colours[0] != colours[1]
        assert await gone.locator(".state.lost").evaluate(
            "e => getComputedStyle(e).color"
        ) == await page.locator(".departed li.lost").evaluate(
            "e => getComputedStyle(e).borderLeftColor"
        )

        cells = page.locator(".grid .cell small")
        await expect(cells).to_have_count(node.config.partitions)
        for index in range(node.config.partitions):
            await expect(cells.nth(index)).to_have_text(re.compile(r"^epoch \d+$"))

        row = page.locator("tr", has_text=idle_executor.config.executor_id)
        await expect(row).to_contain_text("default 4 of 4 free")
        await expect(page.locator("thead")).to_contain_text("Free slots")
        assert "50004" not in await row.inner_text()

        for selector in (".lost-alert", ".departed li", ".legend li"):
            await _within_width(page, selector)
        SHOTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=SHOTS / f"cluster-lost-{size}.png", full_page=True)
        await context.close()
