"""Shared fixtures: one real etcd and one real Postgres per test run.

Each test gets its own database, cloned from a template migrated once per
run, and its own etcd key prefix, deleted afterwards.
Services are started lazily: a run of unit tests alone starts nothing.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path

import psycopg
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from psycopg import sql

from tests.processes import alive, cluster_pids
from tests.services import TEMPLATE_DATABASE, service_data_root
from wheel import eventloop, tracing
from wheel.coordinator.etcd import Etcd
from wheel.eventloop import loop_factory
from wheel.local import LocalServices
from wheel.local.patroni import PatroniCluster
from wheel.store import Store, migrate


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> Mapping[str, object]:
    """Async tests run on the loop wheel runs on (uvloop where installed)."""
    factory = loop_factory()
    return {factory.__module__.split(".")[0]: factory}


@pytest.fixture(scope="session")
def local_services() -> Iterator[LocalServices]:
    """etcd and Postgres, started once for the whole run."""
    root = service_data_root()
    try:
        # WHEEL_TEST_POSTGRES_BIN: another Postgres build's bin/ (`make test-debian-postgres`).
        chosen = os.environ.get("WHEEL_TEST_POSTGRES_BIN")
        postgres_bin = Path(chosen) if chosen else None
        with LocalServices.start(root, durable=False, postgres_bin=postgres_bin) as services:
            with psycopg.connect(services.postgres.dsn(), autocommit=True) as conn:
                create = sql.SQL("CREATE DATABASE {}")
                conn.execute(create.format(sql.Identifier(TEMPLATE_DATABASE)))
            eventloop.run(migrate(services.postgres.dsn(TEMPLATE_DATABASE)))
            yield services
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def database_dsn(local_services: LocalServices) -> Iterator[str]:
    """A DSN of a database of this test's own, cloned from the template."""
    name = f"test_{uuid.uuid4().hex}"
    admin = local_services.postgres.dsn()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE_DATABASE)
            )
        )
    yield local_services.postgres.dsn(name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def empty_database(local_services: LocalServices) -> Iterator[str]:
    """A DSN of an empty database of this test's own: no schema, as before `wheel migrate`."""
    name = f"empty_{uuid.uuid4().hex}"
    admin = local_services.postgres.dsn()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield local_services.postgres.dsn(name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
async def store(database_dsn: str) -> AsyncIterator[Store]:
    """A store over this test's own (migrated) database."""
    opened = await Store.open(database_dsn, min_size=1, max_size=8)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def etcd_prefix(local_services: LocalServices) -> AsyncIterator[str]:
    """An etcd key prefix of this test's own; everything under it is deleted afterwards."""
    prefix = f"/wheel-test/{uuid.uuid4().hex}/"
    yield prefix
    client = await Etcd.connect(local_services.etcd.endpoint)
    try:
        await client.delete_prefix(prefix)
    finally:
        await client.close()


@pytest.fixture
async def etcd_client(local_services: LocalServices) -> AsyncIterator[Etcd]:
    """A connected etcd client of the test's own."""
    client = await Etcd.connect(local_services.etcd.endpoint)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def patroni_cluster(local_services: LocalServices) -> Iterator[PatroniCluster]:
    """Two members, a leader and a streaming synchronous standby; stopped with every process.

    Its keys live under a namespace of this test's own in the run's etcd; `stop()` deletes them.
    """
    root = service_data_root()
    cluster = PatroniCluster.start(
        root, etcd_port=local_services.etcd.port, namespace=f"/wheel-test/{uuid.uuid4().hex}/"
    )
    try:
        cluster.wait_for_sync_standby()
        yield cluster
    finally:
        watched = cluster_pids(cluster)
        stopped = cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert stopped, "every member stops within its grace period and the etcd keys are deleted"
    assert not [pid for pid in watched if alive(pid)], "a process of the cluster outlived stop()"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on for the test; each span is kept here as it ends."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable("wheel-test", provider)
    try:
        yield exporter
    finally:
        tracing.disable()
