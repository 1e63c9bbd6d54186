"""The dashboard's browser tests' fixtures: a node serving the dashboard, an executor running
a task that succeeds ("report") and one that fails ("flaky"), and headless Chromium."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, async_playwright

from tests.integration.dashboard.browsing import chromium
from tests.integration.nodes import NodeFactory
from wheel.executor.config import ExecutorConfig
from wheel.executor.context import TaskContext
from wheel.executor.executor import Executor
from wheel.executor.tasks import TaskRegistry
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    started = await start_node(http_listen="127.0.0.1:0")
    await started.ready.wait()
    return started


@pytest.fixture
async def executor(store: Store, node: SchedulerNode) -> AsyncIterator[Executor]:
    registry = TaskRegistry()

    @registry.task("report")
    async def report(context: TaskContext) -> None:
        pass

    @registry.task("flaky")
    async def flaky(context: TaskContext) -> None:
        raise RuntimeError("upstream refused the connection")

    running = Executor(
        ExecutorConfig(
            executor_id=f"browser-{uuid.uuid4().hex[:6]}",
            nodes=(node.address,),
            pools={"default": 4},
            token=(await store.tenants.create_executor_token("browser"))[1],
        ),
        registry,
    )
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium(), headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            await launched.close()
