"""The web dashboard in a real browser: headless Chromium (the system's, driven by Playwright)
against a real node, its real API and an executor running tasks.

Screenshots of every page, at 1280x800 and at a phone's 390x844, light and dark, go to
build/screenshots/ (WHEEL_SCREENSHOTS to choose); with WHEEL_UPDATE_SCREENSHOTS=1 the
jobs page also replaces the README's docs/screenshots/dashboard.png (`make screenshots`).
"""

from __future__ import annotations

import asyncio
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from playwright.async_api import Browser, expect

import wheel
from tests.integration.dashboard.browsing import ROOT, SHOTS, SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.executor.executor import Executor
from wheel.model.executions import ExecutionStatus
from wheel.model.jobs import Policies
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

README_SHOT = ROOT / "docs" / "screenshots" / "dashboard.png"


def _made(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    return sorted(directory.glob("*.png"))


# What a reader needs on a page: text in cells, links, buttons, inputs, statuses. Each is
# reported if it ends past the viewport's right edge (hidden behind a sideways scroll) or is
# clipped by a box that scrolls sideways.
OFF_SCREEN = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  const needed = 'main td, main th, main a, main button, main input, main .status';
  for (const el of document.querySelectorAll(needed)) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    const text = el.textContent.trim().slice(0, 40);
    const end = Math.round(box.right);
    if (end > width + 1) out.push(`${el.tagName} "${text}" ends at ${end} px`);
  }
  // A card's lines after its first say what they are (the column's header is hidden).
  for (const cell of document.querySelectorAll('main .scroll tbody td:not(:first-child)')) {
    const box = cell.getBoundingClientRect();
    if (box.width === 0 || !cell.textContent.trim() || cell.querySelector('button')) continue;
    const label = getComputedStyle(cell, '::before').content;
    if (!cell.dataset.label || !label.includes(cell.dataset.label)) {
      out.push(`td "${cell.textContent.trim().slice(0, 40)}" has no label`);
    }
  }
  return out;
}"""


async def shoot(browser: Browser, base: str, token: str, paths: dict[str, str]) -> None:
    """Every page at both sizes in both colour schemes; at phone size nothing a reader needs
    may sit off-screen."""
    _made(SHOTS)
    off_screen: dict[str, list[str]] = {}
    for size, viewport in SIZES.items():
        for scheme in ("light", "dark"):
            context = await browser.new_context(viewport=viewport, color_scheme=scheme)  # type: ignore[arg-type]
            page = await context.new_page()
            await sign_in(page, base, token)
            for name, path in paths.items():
                await page.goto(base + path)
                await page.screenshot(path=SHOTS / f"{name}-{size}-{scheme}.png", full_page=True)
                if size == "phone" and (found := await page.evaluate(OFF_SCREEN)):
                    off_screen[name] = found
                if (name, size, scheme) == ("jobs", "desktop", "light") and os.environ.get(
                    "WHEEL_UPDATE_SCREENSHOTS"
                ) == "1":
                    _made(README_SHOT.parent)
                    await page.screenshot(path=README_SHOT)
            await context.close()
    assert not off_screen, f"off-screen at {SIZES['phone']['width']} px: {off_screen}"


async def test_a_tenant_watches_acts_and_explains_in_the_browser(
    node: SchedulerNode, executor: Executor, store: Store, browser: Browser
) -> None:
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "acme")
    async with AsyncClient(node.address, token=token) as client:
        nightly = (
            await client.create_job(
                "nightly-report", "report", wheel.cron("30 1 * * *", "Europe/London")
            )
        ).job
        flaky = (
            await client.create_job(
                "flaky-sync", "flaky", wheel.at(datetime.now(UTC) + timedelta(seconds=0.5)),
                policies=Policies(max_attempts=1),
            )
        ).job  # fmt: skip
        soon = datetime.now(UTC) + timedelta(minutes=2)
        for n in range(6):  # the upcoming-load chart's bars
            await client.create_job(
                f"later-{n}", "report", wheel.at(soon + timedelta(seconds=40 * n))
            )
        async with asyncio.timeout(30):
            while True:  # polling the API: the node and the executor work on their own
                runs = (await client.list_executions(job_id=flaky.id)).items
                if runs and runs[0].status is ExecutionStatus.DEAD:
                    dead = runs[0]
                    break
                await asyncio.sleep(0.1)

    context = await browser.new_context(viewport=SIZES["desktop"])
    page = await context.new_page()

    # A wrong token is refused, and nothing is shown.
    await sign_in(page, base, "whl_" + "x" * 40)
    await expect(page.get_by_role("alert")).to_contain_text("not accepted")
    await page.goto(f"{base}/jobs")
    assert "/signin?next=" in page.url

    # Signed in: the jobs, with the schedule in words and as cron.
    await sign_in(page, base, token)
    await expect(page).to_have_url(re.compile(r"/jobs$"))
    row = page.locator("tr", has_text="nightly-report")
    await expect(row).to_contain_text("At 01:30, every day")
    await expect(row).to_contain_text("30 1 * * *")
    await expect(row).to_contain_text("Europe/London")
    assert token not in await page.content()

    # Trigger one and watch its run succeed.
    await row.get_by_role("button", name="Trigger").click()
    await expect(page).to_have_url(re.compile(r"/runs/"))
    async with asyncio.timeout(30):
        while "Succeeded" not in await page.locator(".verdict").inner_text():
            await asyncio.sleep(0.2)  # the run happens on the executor: reload until done
            await page.reload()
    await expect(page.locator(".timeline")).to_contain_text("succeeded")

    # The runs list, live: a run started elsewhere appears without a reload.
    await page.goto(f"{base}/runs")
    await expect(page.locator("#runs")).to_contain_text("nightly-report")
    await expect(page.locator("#runs")).not_to_contain_text("later-0")
    async with AsyncClient(node.address, token=token) as client:
        await client.trigger_job("later-0")
    await expect(page.locator("#runs")).to_contain_text("later-0", timeout=15_000)

    # A dead run's explain, then retry it from the queue.
    await page.goto(f"{base}/runs/{dead.id}")
    await expect(page.locator(".verdict")).to_contain_text("Failed after 1 attempt")
    await expect(page.locator(".verdict")).to_contain_text("upstream refused the connection")
    await page.goto(f"{base}/queue")
    queued = page.locator("tr", has_text="flaky-sync")
    await page.locator("[data-select-all]").check()  # "choose every run on this page"
    await expect(queued.get_by_role("checkbox")).to_be_checked()
    await page.get_by_role("button", name="Retry the chosen").click()
    await expect(page.locator(".notice")).to_contain_text("1 sent back to pending")

    # Pause and resume.
    await page.goto(f"{base}/jobs/{nightly.id}")
    await page.get_by_role("button", name="Pause").click()
    await expect(page.locator("h1 .status")).to_have_text("paused")
    await page.get_by_role("button", name="Resume").click()
    await expect(page.locator("h1 .status")).to_have_text("active")
    await expect(page.locator(".timeline li").first).to_be_visible()

    # The shard grid: every partition, coloured by its owner.
    await page.goto(f"{base}/cluster")
    await expect(page.locator(".grid .cell")).to_have_count(node.config.partitions)
    await expect(page.locator(".legend")).to_contain_text(node.node_id)
    # The tests' Postgres is one server: the page says what that risks.
    await expect(page.get_by_role("alert")).to_contain_text(
        "Acknowledged jobs are at risk: no synchronous standby"
    )
    await expect(page.locator("table")).to_contain_text(executor.config.executor_id)
    await expect(page.locator(".chart .series")).to_contain_text("default")
    assert await page.locator(".chart .bar").count() == 10

    # Another site's page cannot post here, even with the right CSRF token.
    csrf = await page.locator("input[name=csrf]").first.get_attribute("value")
    assert csrf
    answer = await page.request.post(
        f"{base}/jobs/{nightly.id}/pause", form={"csrf": csrf},
        headers={"Origin": "https://evil.example"},
    )  # fmt: skip
    assert answer.status == 403

    # A form without the session's CSRF token changes nothing.
    answer = await page.request.post(f"{base}/jobs/{nightly.id}/pause", form={"csrf": "forged"})
    assert answer.status == 403
    await page.goto(f"{base}/jobs/{nightly.id}")
    await expect(page.locator("h1 .status")).to_have_text("active")

    # A link followed before signing in opens after it; another tenant's run is then not
    # found, as the API answers.
    other = await browser.new_context()
    stranger = await other.new_page()
    await stranger.goto(f"{base}/runs/{dead.id}")
    await expect(stranger).to_have_url(re.compile(r"/signin\?next="))
    await stranger.fill("#token", await tenant_token(store, "globex"))
    async with stranger.expect_response(lambda r: f"/runs/{dead.id}" in r.url) as seen:
        await stranger.click("button[type=submit]")
    assert (await seen.value).status == 404
    response = await stranger.goto(f"{base}/runs/{dead.id}")
    assert response is not None
    assert response.status == 404
    await expect(stranger.get_by_role("alert")).to_contain_text("not found")
    await other.close()
    await context.close()

    await shoot(browser, base, token, {
        "jobs": "/jobs", "job": f"/jobs/{nightly.id}", "runs": "/runs",
        "run": f"/runs/{dead.id}", "queue": "/queue", "cluster": "/cluster",
        "signin": "/signin",
    })  # fmt: skip
    assert len(_made(SHOTS)) >= 7 * 4
