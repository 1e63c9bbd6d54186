"""A job page's History in a real browser: the runs whose instant has come, newest first, a
page at a time with a link to older ones; the runs still to come are "Next runs", not history.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from playwright.async_api import Browser, Page, expect

import wheel
from tests.integration.dashboard.browsing import SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

PAST_MINUTES = 30


async def _history(page: Page) -> list[datetime]:
    """The instants the History table lists, in its order."""
    cells = page.locator("h2:has-text('History') + .scroll tbody tr td:first-child a")
    return [
        datetime.strptime(text, "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC)
        for text in await cells.all_inner_texts()
    ]


async def _in_view(page: Page, selector: str) -> None:
    """The element fits the viewport's width once scrolled to: nothing essential off-screen."""
    element = page.locator(selector)
    await element.scroll_into_view_if_needed()
    box = await element.bounding_box()
    width = page.viewport_size["width"] if page.viewport_size else 0
    assert box is not None
    assert box["x"] >= 0, box
    assert box["x"] + box["width"] <= width, box


@pytest.mark.parametrize("size", ["desktop", "phone"])
async def test_history_is_the_past_newest_first_with_older_runs_a_link_away(
    node: SchedulerNode, store: Store, browser: Browser, size: str
) -> None:
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "history")
    async with AsyncClient(node.address, token=token) as client:
        minutely = (
            await client.create_job("every-minute", "nobody-serves-it", wheel.cron("* * * * *"))
        ).job
        made = datetime.now(UTC)
        await client.backfill_job(minutely.id, made - timedelta(minutes=PAST_MINUTES), made)
        # Runs to come, beside those the node materialises (its horizon is two minutes here).
        for minutes in range(5, 30, 5):
            await client.trigger_job(minutely.id, at=made + timedelta(minutes=minutes, seconds=1))

    context = await browser.new_context(viewport=SIZES[size])
    page = await context.new_page()
    await sign_in(page, base, token)
    opened = datetime.now(UTC)
    await page.goto(f"{base}/jobs/{minutely.id}")
    first = await _history(page)
    shown = datetime.now(UTC)

    assert len(first) == 20
    assert all(instant <= shown for instant in first), "a run still to come is in History"
    # Newest first, and the newest is the last minute that had come when the page was read.
    assert first == sorted(first, reverse=True)
    assert first[0] >= opened.replace(second=0, microsecond=0) - timedelta(minutes=1)
    assert [a - b for a, b in itertools.pairwise(first)] == [timedelta(minutes=1)] * 19
    await expect(page.locator(".timeline").first).to_be_visible()  # the future: Next runs

    await _in_view(page, "h2:has-text('History') + .scroll tbody tr:first-child td:first-child")
    await _in_view(page, "text=Older runs")
    await page.get_by_role("link", name="Older runs").click()
    older = await _history(page)
    assert older, "the older page is empty"
    assert older[0] == first[-1] - timedelta(minutes=1)  # it goes on where the first ended
    assert older == sorted(older, reverse=True)
    assert len(first) + len(older) >= PAST_MINUTES
    await expect(page.locator("#history")).to_contain_text("older runs")
    await page.get_by_role("link", name="Newest runs").click()
    assert (await _history(page))[0] >= first[0]
    await context.close()
