"""In the browser: the job page's Pause takes a note, and the job page, the Jobs list and the
paused run's word say who paused the job, how long ago and why, at desktop and phone sizes;
a bad note is refused naming it, and resuming clears it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from playwright.async_api import Browser, expect

import wheel
from tests.integration.dashboard.browsing import SIZES, sign_in, tenant_token
from tests.integration.dashboard.test_waiting_words import fits
from wheel.client import AsyncClient
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

NOTE = "vendor outage, INC-123: the upstream billing API answers 503 until their fix ships"
SAID = re.compile(rf"paused by dashboard (just now|\d+ s ago): {re.escape(NOTE)}")


async def test_pause_with_a_note_and_see_who_when_and_why(
    node: SchedulerNode, store: Store, browser: Browser
) -> None:
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "acme")  # its token is named "dashboard"
    async with AsyncClient(node.address, token=token) as client:
        # Due a second ago and no executor: its run stays pending, then paused.
        due = datetime.now(UTC) - timedelta(seconds=1)
        job = (await client.create_job("billing-sync", "billing", wheel.at(due))).job

    viewport = SIZES["desktop"]
    context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    page = await context.new_page()
    await sign_in(page, base, token)
    await page.goto(f"{base}/jobs/{job.id}")
    await expect(page.locator(".pause-note")).to_have_count(0)
    await page.get_by_label("Pause note").fill(NOTE)
    await page.get_by_role("button", name="Pause").click()
    await expect(page.locator("h1 .status").first).to_have_text("paused")
    await expect(page.locator(".pause-note")).to_have_text(SAID)
    await fits(page, ".pause-note", viewport["width"])
    # The paused run's word carries the same sentence explain gives (on hover).
    word = page.locator("td .status.paused")
    await expect(word).to_have_text("paused")
    await expect(word).to_have_attribute(
        "title", re.compile(rf"its job was paused by dashboard at .+Z: {re.escape(NOTE)};")
    )

    await page.goto(f"{base}/jobs")
    row = page.locator("tr", has_text="billing-sync")
    await expect(row.locator(".pause-note")).to_have_text(SAID)
    await fits(page, "tr .pause-note", viewport["width"])

    # At a phone's width the note wraps: nothing of it is off-screen.
    phone = await browser.new_context(viewport=SIZES["phone"])  # type: ignore[arg-type]
    small = await phone.new_page()
    await sign_in(small, base, token)
    for path, selector in ((f"/jobs/{job.id}", ".pause-note"), ("/jobs", "tr .pause-note")):
        await small.goto(base + path)
        await expect(small.locator(selector)).to_have_text(SAID)
        await fits(small, selector, SIZES["phone"]["width"])
    await phone.close()

    # A note of two lines (only a hand-made form can send one) is refused, naming it.
    csrf = await page.locator("input[name=csrf]").first.get_attribute("value")
    assert csrf
    answer = await page.request.post(
        f"{base}/jobs/{job.id}/pause", form={"csrf": csrf, "note": "two\nlines"}
    )
    assert answer.status == 400
    assert "note: must not contain control characters" in await answer.text()
    await page.goto(f"{base}/jobs/{job.id}")
    await expect(page.locator(".pause-note")).to_have_text(SAID)

    await page.get_by_role("button", name="Resume").click()
    await expect(page.locator("h1 .status").first).to_have_text("active")
    await expect(page.locator(".pause-note")).to_have_count(0)
    await context.close()
