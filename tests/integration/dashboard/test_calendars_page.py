"""The Calendars page in a real browser: the tenant's calendars (never another tenant's), what
each closes and its next closed days with their reasons, at desktop and phone sizes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from playwright.async_api import Browser, expect

from tests.integration.dashboard.browsing import SHOTS, SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.schedule.calendars import HolidaySource
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


async def test_the_calendars_page_lists_the_tenants_calendars_and_their_next_closed_days(
    node: SchedulerNode, store: Store, browser: Browser
) -> None:
    token, others = await tenant_token(store, "office"), await tenant_token(store, "other")
    # A listed day that is no English holiday, so the listed date is its reason.
    england = HolidaySource("GB", "ENG")
    soon = datetime.now(UTC).date() + timedelta(days=1)
    while england.holiday(soon) is not None:
        soon += timedelta(days=1)
    async with (
        AsyncClient(node.address, token=token) as client,
        AsyncClient(node.address, token=others) as other,
    ):
        await client.create_calendar(
            "uk-office", holidays=["GB-ENG"], weekdays=["sat", "sun"], dates=[soon],
            description="the London office",
        )  # fmt: skip
        await other.create_calendar("someone-elses", weekdays=["mon"])
    base = f"http://{node.dashboard_address}"
    for size, viewport in SIZES.items():
        context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
        page = await context.new_page()
        await sign_in(page, base, token)
        await page.goto(f"{base}/jobs")
        await page.click("nav >> text=Calendars")
        await expect(page).to_have_url(f"{base}/calendars")
        row = page.locator("table.calendars tbody tr")
        await expect(row).to_have_count(1)
        await expect(row).to_contain_text("uk-office")
        await expect(row).to_contain_text("the London office")
        await expect(row).to_contain_text("GB-ENG")
        await expect(row).to_contain_text("Sat, Sun")
        await expect(row).to_contain_text(soon.isoformat())
        days = row.locator(".closed-days li")
        listed = f"{soon.day} {soon.strftime('%b %Y')} · a listed date"
        await expect(days.filter(has_text=listed)).to_have_count(1)
        await expect(page.locator("body")).not_to_contain_text("someone-elses")
        SHOTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=SHOTS / f"calendars-{size}.png", full_page=True)
        await context.close()
