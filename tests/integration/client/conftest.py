"""A started node and a tenant's token: what the SDK and CLI tests call."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.nodes import NodeFactory
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    started = await start_node()
    await started.ready.wait()
    return started


@pytest.fixture
async def token(store: Store) -> str:
    tenant = await store.tenants.create(f"sdk-{uuid.uuid4().hex[:6]}")
    _, secret = await store.tenants.create_token(tenant.id, "sdk test")
    return secret
