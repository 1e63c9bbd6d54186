"""Scheduler nodes in-process against the real etcd and Postgres, for node and API tests."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.integration.nodes import NodeFactory, fast_config
from tests.services import delete_cluster_keys
from wheel.local import LocalServices
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


@pytest.fixture
async def cluster(local_services: LocalServices) -> AsyncIterator[str]:
    """A cluster name of this test's own; its etcd keys are deleted afterwards."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    yield name
    await delete_cluster_keys(local_services, name)


@pytest.fixture
async def start_node(
    local_services: LocalServices, database_dsn: str, cluster: str
) -> AsyncIterator[NodeFactory]:
    """Start scheduler nodes in this process; every one still running is stopped afterwards."""
    nodes: list[SchedulerNode] = []

    async def start(node_id: str = "node-a", **overrides: Any) -> SchedulerNode:
        etcd = overrides.pop("etcd_endpoint", f"127.0.0.1:{local_services.etcd.port}")
        config = SchedulerConfig(
            node_id=node_id,
            postgres_dsn=database_dsn,
            etcd_endpoint=etcd,
            cluster=cluster,
            **fast_config(**overrides),
        )
        node = SchedulerNode(config)
        await node.start()
        nodes.append(node)
        return node

    yield start
    for node in nodes:
        with contextlib.suppress(Exception):
            await node.stop()


@pytest.fixture
async def token(store: Store) -> str:
    tenant = await store.tenants.create(f"sdk-{uuid.uuid4().hex[:6]}")
    _, secret = await store.tenants.create_token(tenant.id, "sdk test")
    return secret
