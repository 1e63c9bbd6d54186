"""What the dashboard's browser tests share: the sizes they look at, where screenshots go, the
system's Chromium, and signing in as a tenant."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from playwright.async_api import Page

from wheel.store import Store

ROOT = Path(__file__).resolve().parents[3]
SHOTS = Path(os.environ.get("WHEEL_SCREENSHOTS", ROOT / "build" / "screenshots"))
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "the system's Chromium is needed: Debian's chromium package (.ci/run)"
    return found


async def tenant_token(store: Store, name: str) -> str:
    tenant = await store.tenants.create(f"{name}-{uuid.uuid4().hex[:6]}")
    return (await store.tenants.create_token(tenant.id, "dashboard"))[1]


async def sign_in(page: Page, base: str, token: str) -> None:
    await page.goto(f"{base}/signin")
    await page.fill("#token", token)
    await page.click("button[type=submit]")
