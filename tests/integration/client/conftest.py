"""A started node: what the SDK and CLI tests call (with the `token` of tests/integration)."""

from __future__ import annotations

import pytest

from tests.integration.nodes import NodeFactory
from wheel.scheduler.node import SchedulerNode


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    started = await start_node()
    await started.ready.wait()
    return started
