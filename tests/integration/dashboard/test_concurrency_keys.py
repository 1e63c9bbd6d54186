"""In the browser: a job's page shows its concurrency key and limit, and a run held back at
its key's limit reads "at key limit" with the sentence explain says."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from playwright.async_api import Browser, expect

import wheel
from tests.integration.dashboard.browsing import SIZES, sign_in, tenant_token
from wheel.client import AsyncClient
from wheel.executor.config import ExecutorConfig
from wheel.executor.context import TaskContext
from wheel.executor.executor import Executor
from wheel.executor.tasks import TaskRegistry
from wheel.model.jobs import Policies
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


async def test_the_job_page_shows_the_key_and_a_held_run_its_word(
    node: SchedulerNode, store: Store, browser: Browser
) -> None:
    registry = TaskRegistry()
    started = asyncio.Event()
    release = asyncio.Event()

    @registry.task("charge")
    async def charge(context: TaskContext) -> None:
        started.set()
        await release.wait()  # holds the key until the page has been read

    executor = Executor(
        ExecutorConfig(
            executor_id=f"browser-{uuid.uuid4().hex[:6]}",
            nodes=(node.address,),
            pools={"default": 4},
            token=(await store.tenants.create_executor_token("browser"))[1],
        ),
        registry,
    )
    await executor.start()
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store, "keyed")
    keyed = Policies(concurrency_key="billing", concurrency_limit=1)
    try:
        async with AsyncClient(node.address, token=token) as client:
            first = (await client.create_job("charge-a", "charge", wheel.now(),
                                             policies=keyed)).job  # fmt: skip
            async with asyncio.timeout(30):
                await started.wait()
            soon = datetime.now(UTC) + timedelta(seconds=0.2)
            second = (await client.create_job("charge-b", "charge", wheel.at(soon),
                                              policies=keyed)).job  # fmt: skip
            async with asyncio.timeout(30):
                while True:  # polling the API: the node works on its own
                    (held,) = (await client.list_executions(job_id=second.id)).items
                    if held.waiting == "at key limit":
                        break
                    await asyncio.sleep(0.1)
        page = await (await browser.new_context(viewport=SIZES["desktop"])).new_page()  # type: ignore[arg-type]
        await sign_in(page, base, token)
        await page.goto(f"{base}/jobs/{second.id}")
        await expect(page.locator(".concurrency-key")).to_contain_text(
            "Concurrency key billing, at most 1 running at once"
        )
        word = page.locator("table .status").first
        await expect(word).to_have_text("at key limit")
        assert (await word.get_attribute("title") or "").startswith(
            "AT_KEY_LIMIT: key 'billing' has 1 of 1 running (run " + str(first.id)
        )
    finally:
        release.set()
        await executor.stop()
