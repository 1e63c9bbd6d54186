"""The fixtures give each test a real Postgres database and etcd prefix of its own."""

from __future__ import annotations

import uuid

import psycopg
from psycopg import sql

from tests.services import TEMPLATE_DATABASE
from wheel.coordinator.etcd import Etcd
from wheel.local import LocalServices


async def test_a_test_can_write_to_both(
    database_dsn: str, etcd_client: Etcd, etcd_prefix: str
) -> None:
    async with await psycopg.AsyncConnection.connect(database_dsn) as conn:
        await conn.execute("CREATE TABLE probe (id int PRIMARY KEY, note text)")
        await conn.execute("INSERT INTO probe VALUES (1, 'written')")
        row = await (await conn.execute("SELECT note FROM probe WHERE id = 1")).fetchone()
    assert row == ("written",)

    key = f"{etcd_prefix}probe"
    await etcd_client.put(key, b"written")
    got = await etcd_client.get(key)
    assert got is not None
    assert got.value == b"written"


def test_each_test_has_its_own_database(database_dsn: str, local_services: LocalServices) -> None:
    with psycopg.connect(database_dsn) as conn:
        conn.execute("CREATE TABLE mine (id int)")
        name = conn.execute("SELECT current_database()").fetchone()
    assert name is not None
    assert name[0].startswith("test_")
    # The template stays clean: the next test's clone will not see this table.
    with psycopg.connect(local_services.postgres.dsn(TEMPLATE_DATABASE)) as conn:
        found = conn.execute("SELECT to_regclass('mine')").fetchone()
    assert found == (None,)


async def test_the_etcd_prefix_is_emptied_after_each_test(
    local_services: LocalServices, etcd_prefix: str
) -> None:
    client = await Etcd.connect(local_services.etcd.endpoint)
    try:
        # The previous test wrote under its own prefix; nothing of any test survives it.
        leftovers, _ = await client.get_prefix("/wheel-test/")
        assert [kv.key for kv in leftovers] == []
        assert etcd_prefix.startswith("/wheel-test/")
    finally:
        await client.close()


def test_ensure_database_creates_it_once_and_keeps_what_it_holds(
    local_services: LocalServices,
) -> None:
    name = f"ensured_{uuid.uuid4().hex[:12]}"
    postgres = local_services.postgres
    postgres.ensure_database(name)
    with psycopg.connect(postgres.dsn(name), autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (id int)")
    postgres.ensure_database(name)
    try:
        with psycopg.connect(postgres.dsn(name)) as conn:
            assert conn.execute("SELECT to_regclass('kept')::text").fetchone() == ("kept",)
    finally:
        with psycopg.connect(postgres.dsn(), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(name)))
