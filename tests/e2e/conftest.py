"""End-to-end fixtures: a cluster of real processes per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from tests.e2e.cluster import Cluster
from tests.services import delete_cluster_keys
from wheel.local import LocalServices


@pytest.fixture
async def cluster(local_services: LocalServices, database_dsn: str) -> AsyncIterator[Cluster]:
    name = f"e2e-{uuid.uuid4().hex[:10]}"
    running = Cluster(database_dsn, local_services.etcd.port, name)
    try:
        yield running
    finally:
        running.stop()
        await delete_cluster_keys(local_services, name)
