"""In the browser, at desktop and phone sizes: a run no executor serves reads "unserved",
not a grey "pending", on the Runs page and its job's page; the Jobs page flags jobs with
unserved or failing runs, and the header counts them and links to just those."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from playwright.async_api import Browser, Page, expect

import wheel
from tests.integration.dashboard.browsing import SHOTS, SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.executor.executor import Executor
from wheel.model.executions import ExecutionStatus
from wheel.model.jobs import Policies
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

# The browser test's fixtures: a node with its dashboard, an executor, Chromium.


async def fits(page: Page, selector: str, width: int) -> None:
    """The element is on screen at this width: nothing essential is cut off."""
    box = await page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= width, f"{selector} is off-screen at {width} px"


@pytest.mark.parametrize("size", ["desktop", "phone"])
async def test_lists_say_why_runs_wait_and_flag_jobs_needing_attention(
    node: SchedulerNode, executor: Executor, store: Store, browser: Browser, size: str
) -> None:
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "acme")
    soon = datetime.now(UTC) + timedelta(seconds=0.3)
    async with AsyncClient(node.address, token=token) as client:
        typo = (await client.create_job("typo-job", "reprot", wheel.at(soon))).job
        fine = (await client.create_job("fine-job", "report", wheel.at(soon))).job
        flaky = (await client.create_job("flaky-job", "flaky", wheel.at(soon),
                                         policies=Policies(max_attempts=1))).job  # fmt: skip
        async with asyncio.timeout(30):
            while True:  # polling the API: the node and the executor work on their own
                (stuck,) = (await client.list_executions(job_id=typo.id)).items
                (ran,) = (await client.list_executions(job_id=fine.id)).items
                (died,) = (await client.list_executions(job_id=flaky.id)).items
                if (stuck.waiting, ran.status, died.status) == (
                    "unserved",
                    ExecutionStatus.SUCCEEDED,
                    ExecutionStatus.DEAD,
                ):
                    break
                await asyncio.sleep(0.1)

    viewport = SIZES[size]
    context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    page = await context.new_page()
    await sign_in(page, base, token)

    # The Runs page: the word, not "pending"; its sentence on hover.
    await page.goto(f"{base}/runs")
    row = page.locator("#runs tr", has_text="typo-job")
    word = row.locator(".status")
    await expect(word).to_have_text("unserved")
    await fits(page, "#runs tr:has-text('typo-job') .status", viewport["width"])
    assert "no connected executor serves task type 'reprot'" in (
        await word.get_attribute("title") or ""
    )
    await expect(page.locator("#runs tr", has_text="fine-job").locator(".status")).to_have_text(
        "succeeded"
    )
    await expect(page.locator("#runs")).not_to_contain_text("pending")
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SHOTS / f"attention-runs-{size}.png", full_page=True)

    # The job's page: its history says so, and the heading flags it.
    await page.goto(f"{base}/jobs/{typo.id}")
    await expect(page.locator("table .status").first).to_have_text("unserved")
    await expect(page.locator("h1 .attention")).to_have_text("1 unserved")

    await page.screenshot(path=SHOTS / f"attention-job-{size}.png", full_page=True)

    # The Jobs page flags the two jobs whose runs need attention, not the one that is fine.
    await page.goto(f"{base}/jobs")
    await expect(page.locator("tr", has_text="typo-job").locator(".attention")).to_have_text(
        "1 unserved"
    )
    await expect(page.locator("tr", has_text="flaky-job").locator(".attention")).to_have_text(
        "1 failing"
    )
    await expect(page.locator("tr", has_text="fine-job").locator(".attention")).to_have_count(0)
    await fits(page, "tr:has-text('typo-job') .attention", viewport["width"])

    # The header counts them on every page, and links to just those.
    count = page.locator("header .attention-count")
    await expect(count).to_have_text("2 jobs need attention")
    await fits(page, "header .attention-count", viewport["width"])
    await page.goto(f"{base}/runs")
    await expect(count).to_have_text("2 jobs need attention")
    await count.click()
    await expect(page).to_have_url(f"{base}/jobs?attention=1")
    await expect(page.locator("h1")).to_have_text("Jobs needing attention")
    await expect(page.locator("tbody")).to_contain_text("typo-job")
    await expect(page.locator("tbody")).to_contain_text("flaky-job")
    await expect(page.locator("tbody")).not_to_contain_text("fine-job")
    await page.screenshot(path=SHOTS / f"attention-jobs-{size}.png", full_page=True)
    await context.close()
