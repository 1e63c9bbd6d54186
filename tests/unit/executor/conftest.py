"""A cluster of this test's own in the shared etcd: fake nodes listed in it, and executors."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from tests.unit.executor.helpers import Cluster, Gate
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.local import LocalServices


@pytest.fixture
async def cluster(local_services: LocalServices, etcd_client: Etcd) -> AsyncIterator[Cluster]:
    """A uniquely named cluster; its executors are stopped and its keys deleted afterwards."""
    layout = Layout(f"executor-test-{uuid.uuid4().hex[:10]}")
    etcd = await Etcd.connect(local_services.etcd.endpoint)
    created = Cluster(layout, local_services.etcd.endpoint, etcd, etcd_client)
    try:
        yield created
    finally:
        for executor in created.executors:
            await executor.stop()
        for node in created.nodes:
            await node.stop()
        await etcd_client.delete_prefix(layout.root)
        await etcd.close()


@pytest.fixture
def gate() -> Gate:
    return Gate()
