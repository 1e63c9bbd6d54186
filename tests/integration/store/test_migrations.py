"""Migrations: replaying them gives schema.sql; concurrent starts apply each once."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from importlib import resources

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.integration.store.lost_answers import LossyProxy
from wheel.cli.main import cli
from wheel.errors import MigrationError, NameTaken, WheelError
from wheel.local import LocalServices
from wheel.model.ids import PartitionId, new_job_id
from wheel.model.jobs import JobSpec, Schedule, ScheduleKind
from wheel.store import Store, migrate
from wheel.store.migrate import available, pending, wait_until_migrated


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


async def test_a_migration_whose_commit_answer_was_lost_is_not_applied_twice(
    empty_database: str,
) -> None:
    """A failover can take the answer to a migration's commit: the next run carries on."""
    direct = conninfo_to_dict(empty_database)
    async with LossyProxy.running(str(direct["host"]), int(direct["port"])) as proxy:
        through = make_conninfo(empty_database, host="127.0.0.1", port=str(proxy.port))
        proxy.lose_answer(b"INSERT INTO wheel_migrations")
        with pytest.raises(WheelError):
            await migrate(through)
        assert proxy.lost.is_set(), "the first migration committed, unheard"
        rest = await migrate(through)
    assert [m.number for m in rest] == [m.number for m in available()[1:]]
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


async def test_jobs_that_shared_a_name_keep_it_oldest_first_once_names_are_unique(
    empty_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before_names = [m for m in available() if m.name != "job_names"]
    # `wheel.store.migrate` the attribute is the function; the module is in sys.modules.
    monkeypatch.setattr(sys.modules["wheel.store.migrate"], "available", lambda: before_names)
    await migrate(empty_database)
    store = await Store.open(empty_database, min_size=1, max_size=1)
    try:
        owner, other = await store.tenants.create("owner"), await store.tenants.create("other")
        spec = JobSpec("digest", "report", Schedule(ScheduleKind.CRON, cron="0 9 * * *"))
        made = [
            await store.jobs.create(tenant.id, new_job_id(), PartitionId(0), spec)
            for tenant in (owner, owner, owner, other)
        ]
        gone = await store.jobs.create(owner.id, new_job_id(), PartitionId(0), spec)
        await store.jobs.delete(owner.id, gone.id)
        monkeypatch.undo()
        assert [m.name for m in await migrate(empty_database)] == ["job_names"]
        names = [(await store.jobs.get(job.tenant_id, job.id)).spec.name for job in made]
        assert names == [
            "digest",
            f"digest-{str(made[1].id)[:8]}",
            f"digest-{str(made[2].id)[:8]}",
            "digest",
        ]
        assert (await store.jobs.get(owner.id, gone.id)).spec.name == "digest", "deleted: kept"
        with pytest.raises(NameTaken):
            await store.jobs.create(owner.id, new_job_id(), PartitionId(0), spec)
    finally:
        await store.close()


async def _said_waiting(caplog: pytest.LogCaptureFixture) -> None:
    async with asyncio.timeout(10):
        while True:
            if any(r.msg == "store.waiting_for_migration" for r in caplog.records):
                return
            await asyncio.sleep(0.01)  # the waiter's log is the only sign it is waiting


async def test_a_new_database_lacks_every_migration_and_a_migrated_one_none(
    empty_database: str,
) -> None:
    assert [m.number for m in await pending(empty_database)] == [m.number for m in available()]
    await migrate(empty_database)
    assert await pending(empty_database) == []


async def test_it_waits_saying_what_is_missing_and_returns_once_migrated(
    empty_database: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="wheel.store.migrate")
    waiting = asyncio.create_task(wait_until_migrated(empty_database, poll_s=0.05))
    await _said_waiting(caplog)
    assert not waiting.done()
    (said,) = [r for r in caplog.records if r.msg == "store.waiting_for_migration"]
    assert "missing 0001_initial" in said.reason  # type: ignore[attr-defined]
    await migrate(empty_database)
    async with asyncio.timeout(10):
        await waiting


async def test_it_waits_while_postgres_is_away(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="wheel.store.migrate")
    nowhere = "postgresql://wheel@127.0.0.1:1/wheel?connect_timeout=1"
    waiting = asyncio.create_task(wait_until_migrated(nowhere, poll_s=0.05))
    await _said_waiting(caplog)
    (said,) = [r for r in caplog.records if r.msg == "store.waiting_for_migration"]
    assert "cannot read the schema" in said.reason  # type: ignore[attr-defined]
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
