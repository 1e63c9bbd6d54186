"""End-to-end fixtures: a cluster of real processes per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import aetcd
import pytest

from tests.e2e.cluster import Cluster
from wheel.local import LocalServices


@pytest.fixture
async def cluster(local_services: LocalServices, database_dsn: str) -> AsyncIterator[Cluster]:
    name = f"e2e-{uuid.uuid4().hex[:10]}"
    running = Cluster(database_dsn, local_services.etcd.port, name)
    try:
        yield running
    finally:
        running.stop()
        client = aetcd.Client(host="127.0.0.1", port=local_services.etcd.port)
        await client.connect()
        try:
            await client.delete_prefix(f"/wheel/{name}/".encode())
        finally:
            await client.close()
