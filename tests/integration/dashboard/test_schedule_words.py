"""Schedules in words on the dashboard, in a real browser at desktop and phone sizes: the
words wheel's own cron gives for each job (its `H` fields as resolved for it, seconds
fields, Debian cron's day rule), on the Jobs page and the job's page."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect

import wheel
from tests.integration.dashboard.browsing import SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.schedule import cron
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


@pytest.mark.parametrize("size", list(SIZES))
async def test_each_job_reads_as_wheel_runs_it(
    node: SchedulerNode, store: Store, browser: Browser, size: str
) -> None:
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "words")
    async with AsyncClient(node.address, token=token) as client:
        tenth = (await client.create_job("tenth-mondays", "t", wheel.cron("0 0 */10 * 1"))).job
        either = (await client.create_job("either", "t", wheel.cron("0 0 1,15 * 1"))).job
        seconds = (await client.create_job("ticker", "t", wheel.cron("*/10 * * * * *"))).job
        hashed = (await client.create_job("spread", "t", wheel.cron("H H * * *"))).job
    resolved = cron.parse("H H * * *", hashed.id)
    expected = {
        tenth.id: "At 00:00, on days 1, 11, 21 and 31 of the month if it falls on Monday",
        either.id: "At 00:00, on days 1 and 15 of the month, and also on Monday",
        seconds.id: "Every 10 seconds",
        hashed.id: f"At {resolved.hours[0]:02d}:{resolved.minutes[0]:02d}, every day",
    }
    context = await browser.new_context(viewport=SIZES[size])
    page = await context.new_page()
    await sign_in(page, base, token)
    await page.goto(f"{base}/jobs")
    for job_id, words in expected.items():
        row = page.locator("tr", has=page.locator(f'a[href="/jobs/{job_id}"]'))
        await expect(row).to_contain_text(words)
    for job_id, words in expected.items():
        await page.goto(f"{base}/jobs/{job_id}")
        await expect(page.locator("main p").first).to_contain_text(words)
    await context.close()
