"""The job page's "Around the next DST change", in a real browser at desktop and phone
sizes: the runs on both sides of the change, whatever the schedule's frequency, with
the change said in words. The change is the zone's next one (from zoneinfo, relative
to now); the runs expected are computed from it here, not read from the page.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from playwright.async_api import Browser, expect

import wheel
from tests.integration.dashboard.browsing import SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.schedule import next_transition
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


def _shown(instant: datetime, zone: str) -> str:
    """A run's wall time as a person reads it, seconds when it has them."""
    local = instant.astimezone(ZoneInfo(zone))
    return f"{local:%H:%M:%S}" if local.second else f"{local:%H:%M} {local.tzname()}"


# name, cron, zone, the time between runs: each runs on the change's own instant.
JOBS = [
    ("london-every-minute", "* * * * *", "Europe/London", timedelta(minutes=1)),
    ("london-hourly", "0 * * * *", "Europe/London", timedelta(hours=1)),
    ("london-every-10-seconds", "*/10 * * * * *", "Europe/London", timedelta(seconds=10)),
    ("lord-howe-every-minute", "* * * * *", "Australia/Lord_Howe", timedelta(minutes=1)),
]


@pytest.mark.parametrize("size", list(SIZES))
async def test_the_runs_next_to_the_change_are_shown_for_frequent_and_daily_jobs(
    node: SchedulerNode, store: Store, browser: Browser, size: str
) -> None:
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "dst")
    async with AsyncClient(node.address, token=token) as client:
        ids = {
            name: (await client.create_job(name, "report", wheel.cron(expression, zone))).job.id
            for name, expression, zone, _ in JOBS
        }
        daily = (
            await client.create_job("nightly", "report", wheel.cron("30 1 * * *", "Europe/London"))
        ).job.id
    context = await browser.new_context(viewport=SIZES[size])
    page = await context.new_page()
    await sign_in(page, base, token)
    width = SIZES[size]["width"]

    for name, _, zone, period in JOBS:
        change = next_transition(ZoneInfo(zone), datetime.now(UTC), timedelta(days=400))
        assert change is not None
        await page.goto(f"{base}/jobs/{ids[name]}")
        section = page.locator("section.around-change")
        await expect(section.get_by_role("heading")).to_have_text(
            f"Around the next DST change in {zone}"
        )
        await expect(section).to_contain_text(change.describe())
        await expect(section).to_contain_text(f"{change.at:%a %d %b %Y} at {change.at:%H:%M} UTC")
        items = section.locator(".timeline li")
        await expect(items).to_have_count(9)  # four runs, the change, four runs
        marker = items.nth(4)
        await expect(marker).to_have_class("change")
        await expect(marker).to_contain_text(f"Here {change.describe()}")
        # The run just before the change is one period before it, the first after is on it.
        await expect(items.nth(3)).to_contain_text(_shown(change.at - period, zone))
        await expect(items.nth(5)).to_contain_text(_shown(change.at, zone))
        await expect(items.nth(0)).to_contain_text(_shown(change.at - 4 * period, zone))
        # Nothing of it off-screen at a phone's width.
        box = await marker.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= width

    # A daily job: the days around the change, the run the change moves noted.
    change = next_transition(ZoneInfo("Europe/London"), datetime.now(UTC), timedelta(days=400))
    assert change is not None
    await page.goto(f"{base}/jobs/{daily}")
    items = page.locator("section.around-change .timeline li")
    await expect(items).to_have_count(9)
    moved = items.nth(5) if change.forward else items.nth(3)
    await expect(moved).to_have_class("dst")
    await expect(moved).to_contain_text("01:30")
    day = timedelta(days=1)
    # Going back, the day of the change has its run before it (on the first 01:30).
    first, last = (-4 * day, 3 * day) if change.forward else (-3 * day, 4 * day)
    for n, shift in ((0, first), (8, last)):
        await expect(items.nth(n)).to_contain_text(f"{change.at + shift:%d %b}")
    await context.close()
