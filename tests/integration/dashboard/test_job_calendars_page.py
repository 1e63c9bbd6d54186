"""The job page of a job that names business calendars, in a real browser: the calendars
and the policy under the title, and the next runs saying which are skipped or moved and
why. The closed days are computed from now; the page is not asked what they are."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from playwright.async_api import Browser, expect

import wheel
from tests.integration.dashboard.browsing import SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.model.jobs import CalendarPolicy, Policies
from wheel.schedule.calendars import day_text
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


async def test_the_job_page_shows_its_calendars_and_the_runs_they_skip_or_move(
    node: SchedulerNode, store: Store, browser: Browser
) -> None:
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "calendars")
    closed = datetime.now(UTC).date() + timedelta(days=2)
    async with AsyncClient(node.address, token=token) as client:
        await client.create_calendar("shutdown", dates=[closed])
        skipping = await client.create_job(
            "daily", "report", wheel.cron("0 9 * * *"), policies=Policies(calendars=("shutdown",))
        )
        weekday = (closed.weekday() + 1) % 7
        moving = await client.create_job(
            "weekly",
            "report",
            wheel.cron(f"0 9 * * {weekday}"),
            policies=Policies(
                calendars=("shutdown",), calendar_policy=CalendarPolicy.NEXT_BUSINESS_DAY
            ),
        )
    context = await browser.new_context(viewport=SIZES["desktop"])
    page = await context.new_page()
    await sign_in(page, base, token)

    await page.goto(f"{base}/jobs/{skipping.job.id}")
    await expect(page.locator("p.calendars")).to_have_text(
        "Business calendars: shutdown · on a closed day: skip"
    )
    skipped = page.locator(".timeline li.calendar-skipped")
    await expect(skipped).to_have_count(1)
    await expect(skipped).to_contain_text(
        f"skipped: {day_text(closed)} is a listed date ({day_text(closed)}) (calendar shutdown)"
    )

    await page.goto(f"{base}/jobs/{moving.job.id}")
    await expect(page.locator("p.calendars")).to_contain_text("next business day")
    moved = page.locator(".timeline li.calendar-moved").first
    following = closed + timedelta(days=1)
    await expect(moved).to_contain_text(
        f"moved to {following:%a} {following.day} {following:%b} "
        f"({closed.day} {closed:%b} is a listed date ({day_text(closed)}), calendar shutdown)"
    )
    await expect(moved.locator("time")).to_contain_text(f"{following:%a %d %b %Y}, 09:00")
    await context.close()
