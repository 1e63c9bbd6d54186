"""The run page in a real browser, at desktop and phone sizes: the verdict in words, one
consistent read (the verdict and the attempts agree), and a retry that says who asked and
counts the new try's attempts as people do.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.async_api import Browser, Page, expect

import wheel
from tests.integration.dashboard.browsing import SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.executor.executor import Executor
from wheel.model.executions import ExecutionStatus
from wheel.model.jobs import Policies
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

ENUM_NAME = re.compile(r"\b[A-Z]{2,}(_[A-Z]+)*\b")
"""IN_FLIGHT, SUCCEEDED, DEAD: what the page said instead of words."""


async def _dead_with(client: AsyncClient, execution_id: str, attempts: int) -> None:
    """Until the run is dead with `attempts` made, every try's (the executor works alone)."""
    async with asyncio.timeout(30):
        while True:
            found = await client.get_execution(execution_id)
            if found.status is ExecutionStatus.DEAD and found.attempt == attempts:
                return
            await asyncio.sleep(0.1)  # polling the API: there is no event to await


async def _in_view(page: Page, selector: str) -> None:
    """The element fits the viewport's width: nothing essential off-screen."""
    element = page.locator(selector).first
    await element.scroll_into_view_if_needed()
    box = await element.bounding_box()
    width = page.viewport_size["width"] if page.viewport_size else 0
    assert box is not None
    assert box["x"] >= 0, box
    assert box["x"] + box["width"] <= width, box


async def _verdict(page: Page) -> str:
    return await page.locator(".verdict strong").inner_text()


@pytest.mark.parametrize("size", ["desktop", "phone"])
async def test_a_run_page_says_its_verdict_in_words_and_a_retry_is_a_new_try(
    node: SchedulerNode, executor: Executor, store: Store, browser: Browser, size: str
) -> None:
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "runs")  # the token's name is "dashboard"
    async with AsyncClient(node.address, token=token) as client:
        nightly = (
            await client.create_job(
                "nightly-report", "report", wheel.cron("30 1 * * *", "Europe/London")
            )
        ).job
        flaky = (
            await client.create_job(
                "flaky-sync", "flaky", wheel.at(datetime.now(UTC) + timedelta(seconds=0.3)),
                policies=Policies(max_attempts=2, backoff_base=timedelta(0)),
            )
        ).job  # fmt: skip
        (run,) = (await client.list_executions(job_id=flaky.id)).items
        await _dead_with(client, run.id, 2)

    context = await browser.new_context(viewport=SIZES[size])
    page = await context.new_page()
    await sign_in(page, base, token)

    # Trigger: the verdict in words, and the attempts table agrees with it on every read.
    await page.goto(f"{base}/jobs/{nightly.id}")
    await page.get_by_role("button", name="Trigger now").click()
    await expect(page).to_have_url(re.compile(r"/runs/"))
    async with asyncio.timeout(30):
        while True:
            verdict = await _verdict(page)
            assert not ENUM_NAME.search(verdict), verdict
            outcomes = await page.locator("table .status").all_inner_texts()
            if verdict != "Succeeded":
                assert "succeeded" not in outcomes, f"{verdict!r} beside {outcomes}"
            else:
                assert outcomes == ["succeeded"]
                break
            await asyncio.sleep(0.1)  # the run happens on the executor: reload until done
            await page.reload()
    await _in_view(page, ".verdict")

    # A dead run: its attempts, in words.
    await page.goto(f"{base}/runs/{run.id}")
    assert await _verdict(page) == "Failed after 2 attempts"
    await expect(page.locator(".attempt")).to_have_text("attempt 2 of 2")
    await _in_view(page, ".verdict")

    # Retried from the page: a new try with the job's 2 attempts, retried by the token's name.
    await page.get_by_role("button", name="Retry").click()
    await expect(page).to_have_url(re.compile(r"/runs/"))
    async with AsyncClient(node.address, token=token) as client:
        await _dead_with(client, run.id, 4)
    await page.reload()
    assert await _verdict(page) == "Failed after 2 attempts (second try)"
    await expect(page.locator(".attempt")).to_have_text("attempt 2 of 2 (second try)")
    await expect(page.locator("main")).not_to_contain_text("4 attempts")
    retried = page.locator(".timeline li", has_text="retried")
    await expect(retried).to_contain_text(re.compile(r"retried\s+by dashboard at \d{4}-"))
    first_row = page.locator(".timeline li").first
    await expect(first_row).to_contain_text("materialised")
    async with AsyncClient(node.address, token=token) as client:
        (retry,) = (await client.get_execution(run.id)).retries
    made = await first_row.inner_text()
    at_ms = retry.at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert at_ms not in made, f"made to fire at its retry's time: {made}"
    numbers = await page.locator("table tbody tr td:first-child").all_inner_texts()
    assert numbers == ["1", "2", "1 (second try)", "2 (second try)"]
    await _in_view(page, ".timeline li:has-text('retried')")
    assert not ENUM_NAME.search(await _verdict(page))
    await context.close()
