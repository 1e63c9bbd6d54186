"""An interval job's page in a real browser: the schedule in words, its next runs, and the
runs around the zone's next DST change under both policies (real time keeps the spacing
and moves the wall time; the wall clock keeps the wall time). The change is London's next
one (from zoneinfo, relative to now); the expected runs are computed here from it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from playwright.async_api import Browser, expect

import wheel
from tests.integration.dashboard.browsing import SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.schedule import next_transition
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

LONDON = ZoneInfo("Europe/London")
DAY = timedelta(days=1)


def _shown(instant: datetime) -> str:
    local = instant.astimezone(LONDON)
    return f"{local:%H:%M} {local:%Z}"


async def test_an_interval_jobs_page_says_its_schedule_and_its_dst_change(
    node: SchedulerNode, store: Store, browser: Browser
) -> None:
    change = next_transition(LONDON, datetime.now(UTC), timedelta(days=400))
    assert change is not None
    # 09:00 in London, ten days before the change.
    anchor = datetime.combine((change.at - 10 * DAY).astimezone(LONDON).date(),
                              datetime.min.time().replace(hour=9), LONDON)  # fmt: skip
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "interval")
    async with AsyncClient(node.address, token=token) as client:
        elapsed = await client.create_job(
            "daily-real", "report", wheel.every(DAY, "Europe/London", anchor=anchor)
        )
        wall = await client.create_job(
            "daily-wall", "report",
            wheel.every(DAY, "Europe/London", anchor=anchor, dst="wall"),
        )  # fmt: skip
        await client.create_job("quarterly", "report", wheel.every(timedelta(minutes=15)))
    context = await browser.new_context(viewport=SIZES["desktop"])
    page = await context.new_page()
    await sign_in(page, base, token)

    await page.goto(f"{base}/jobs")
    await expect(page.locator("body")).to_contain_text("Every 15 minutes of real time")

    # Real time: the run after the change is 24 h after the one before, so its wall time moved.
    await page.goto(f"{base}/jobs/{elapsed.job.id}")
    await expect(page.locator("main p").first).to_contain_text(
        f"Every 1 day of real time, from {anchor.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    )
    items = page.locator("section.around-change .timeline li")
    await expect(items).to_have_count(9)
    runs = [anchor.astimezone(UTC) + k * DAY for k in range(20)]  # real time, not wall
    before = max(run for run in runs if run < change.at)
    after = before + DAY
    await expect(items.nth(3)).to_contain_text(_shown(before))
    await expect(items.nth(5)).to_contain_text(_shown(after))
    assert _shown(before)[:5] != _shown(after)[:5]  # 09:00 GMT, then 10:00 BST (or back)
    await expect(items.nth(5)).to_have_class("dst")
    await expect(items.nth(5)).to_contain_text("of real time after it")

    # The wall clock: 09:00 on both sides; the first run after says the real time was not 24 h.
    await page.goto(f"{base}/jobs/{wall.job.id}")
    await expect(page.locator("main p").first).to_contain_text(
        "Every 1 day by the wall clock in Europe/London"
    )
    items = page.locator("section.around-change .timeline li")
    await expect(items).to_have_count(9)
    await expect(items.nth(3)).to_contain_text("09:00")
    await expect(items.nth(5)).to_contain_text("09:00")
    shortened = "23 hours" if change.forward else "25 hours"
    await expect(items.nth(5)).to_contain_text(f"{shortened} of real time after it")
    await context.close()
