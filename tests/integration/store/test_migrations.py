"""Migrations: replaying them gives schema.sql; concurrent starts apply each once."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from importlib import resources

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from wheel.cli.main import cli
from wheel.errors import MigrationError
from wheel.local import LocalServices
from wheel.store import migrate
from wheel.store.migrate import available


@pytest.fixture
def empty_database(local_services: LocalServices) -> Iterator[str]:
    name = f"empty_{uuid.uuid4().hex}"
    admin = local_services.postgres.dsn()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield local_services.postgres.dsn(name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _schema_dump(services: LocalServices, dsn: str) -> str:
    result = subprocess.run(
        [
            str(services.postgres.bin_dir / "pg_dump"),
            "--schema-only",
            "--no-owner",
            "--no-privileges",
            "--exclude-table=wheel_migrations",
            "--restrict-key=wheel",
            dsn,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


async def test_replayed_migrations_equal_the_fresh_schema(
    local_services: LocalServices, empty_database: str, database_dsn: str
) -> None:
    # database_dsn is a clone of the template, which the migrations built.
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute(resources.files("wheel.store").joinpath("schema.sql").read_text())
    fresh = _schema_dump(local_services, empty_database)
    replayed = _schema_dump(local_services, database_dsn)
    assert "CREATE TABLE public.executions" in fresh
    assert replayed == fresh


async def test_migrating_twice_applies_nothing_the_second_time(empty_database: str) -> None:
    first = await migrate(empty_database)
    assert [m.number for m in first] == [m.number for m in available()]
    assert await migrate(empty_database) == []


async def test_concurrent_starts_apply_each_migration_once(empty_database: str) -> None:
    results = await asyncio.gather(*(migrate(empty_database) for _ in range(4)))
    applied = sorted(m.number for result in results for m in result)
    assert applied == [m.number for m in available()]
    with psycopg.connect(empty_database) as conn:
        rows = conn.execute("SELECT number FROM wheel_migrations ORDER BY number").fetchall()
    assert [r[0] for r in rows] == [m.number for m in available()]


async def test_an_applied_migration_that_changed_is_an_error(empty_database: str) -> None:
    await migrate(empty_database)
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute("UPDATE wheel_migrations SET sha256 = 'edited' WHERE number = 1")
    with pytest.raises(MigrationError, match="applied migrations must never change"):
        await migrate(empty_database)


async def test_a_database_migrated_by_a_newer_wheel_is_refused(empty_database: str) -> None:
    await migrate(empty_database)
    with psycopg.connect(empty_database, autocommit=True) as conn:
        conn.execute("INSERT INTO wheel_migrations VALUES (999, 'future', 'x')")
    with pytest.raises(MigrationError, match=r"migrations \[999\]"):
        await migrate(empty_database)


def test_wheel_migrate_command(empty_database: str) -> None:
    runner = CliRunner()
    first = runner.invoke(cli, ["migrate", "--dsn", empty_database])
    assert first.exit_code == 0, first.output
    assert "applied 0001_initial" in first.output
    second = runner.invoke(cli, ["migrate"], env={"WHEEL_POSTGRES_DSN": empty_database})
    assert second.exit_code == 0, second.output
    assert second.output.strip() == "schema already up to date"
