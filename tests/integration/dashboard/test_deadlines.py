"""A missed deadline in a real browser: the job page says the job's deadline and flags the
job and the run, the runs list flags the run, and the run page says when it missed."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from playwright.async_api import Browser, expect

import wheel
from tests.integration.dashboard.browsing import SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.model.jobs import Policies
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


async def test_a_run_that_missed_its_deadline_is_flagged_on_every_page(
    node: SchedulerNode, store: Store, browser: Browser
) -> None:
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "deadlines")
    async with AsyncClient(node.address, token=token) as client:
        job = (
            await client.create_job(
                "nobody-runs-it", "nobody-serves-it",
                wheel.at(datetime.now(UTC) + timedelta(milliseconds=200)),
                policies=Policies(deadline=timedelta(seconds=1), notify_after_failures=3),
            )
        ).job  # fmt: skip
        async with asyncio.timeout(20):
            while True:  # pending and unserved: it misses its deadline, and the owner marks it
                (run,) = (await client.list_executions(job_id=job.id)).items
                if run.deadline_missed_at is not None:
                    break
                await asyncio.sleep(0.1)  # polling the API: there is no event to await

    context = await browser.new_context(viewport=SIZES["desktop"])
    page = await context.new_page()
    await sign_in(page, base, token)
    await page.goto(f"{base}/jobs/{job.id}")
    await expect(page.locator(".deadline")).to_have_text("deadline 1.0 s after each run's instant")
    await expect(page.locator(".streaks")).to_contain_text("told after 3 failed runs in a row")
    await expect(page.locator("h1 .status.attention")).to_contain_text("1 missed deadline")
    await expect(page.locator("tbody .status.deadline-missed")).to_have_count(1)

    await page.goto(f"{base}/runs?job={job.id}")
    await expect(page.locator("#runs .status.deadline-missed")).to_have_text("deadline missed")

    await page.goto(f"{base}/runs/{run.id}")
    await expect(page.locator("p.deadline.missed")).to_contain_text("missed")
    step = page.locator(".timeline li", has_text="deadline missed")
    await expect(step).to_contain_text("(deadline 1.0 s after")
    await expect(page.locator(".verdict")).to_contain_text("it missed its deadline")
    await context.close()
