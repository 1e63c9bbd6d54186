"""Schema migrations: numbered `.sql` files applied in order, once each.

`migrations/NNNN_name.sql` are applied in number order, each in its own
transaction together with its row in `wheel_migrations` (number, name,
SHA-256 of the file). A session advisory lock makes concurrent starts safe:
the second waits, then finds nothing left to do. An applied migration whose
file has since changed is an error, never silently skipped.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import psycopg

from wheel.errors import MigrationError, StoreError
from wheel.store.translate import translated

log = logging.getLogger(__name__)

# pg_advisory_lock key: an arbitrary constant that names "wheel migrations".
MIGRATION_LOCK_KEY = 0x77686565_6C6D6967  # "wheelmig"
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS wheel_migrations (
    number      integer PRIMARY KEY,
    name        text NOT NULL,
    sha256      text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""


@dataclass(frozen=True, slots=True)
class Migration:
    number: int
    name: str
    sql: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def available() -> list[Migration]:
    """Every migration shipped with wheel, in order."""
    found = []
    for entry in resources.files("wheel.store").joinpath("migrations").iterdir():
        match = _NAME.match(entry.name)
        if match is None:
            if entry.name.endswith(".sql"):
                raise MigrationError(f"migration file name {entry.name!r} is not NNNN_name.sql")
            continue
        found.append(Migration(int(match[1]), match[2], entry.read_text()))
    found.sort(key=lambda m: m.number)
    numbers = [m.number for m in found]
    if numbers != list(range(1, len(found) + 1)):
        raise MigrationError(f"migration numbers must run 1, 2, 3... without gaps: {numbers}")
    return found


async def migrate(dsn: str) -> list[Migration]:
    """Bring the database at `dsn` up to date; return the migrations applied now."""
    migrations = available()
    applied_now = []
    async with translated():
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        async with conn:
            await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
            try:
                await conn.execute(_CREATE_TABLE)
                cursor = await conn.execute("SELECT number, name, sha256 FROM wheel_migrations")
                done = {number: (name, sha) for number, name, sha in await cursor.fetchall()}
                for migration in migrations:
                    if migration.number in done:
                        _check_unchanged(migration, *done[migration.number])
                        continue
                    async with conn.transaction():
                        await conn.execute(migration.sql)
                        await conn.execute(
                            "INSERT INTO wheel_migrations (number, name, sha256)"
                            " VALUES (%s, %s, %s)",
                            (migration.number, migration.name, migration.sha256),
                        )
                    applied_now.append(migration)
                unknown = sorted(set(done) - {m.number for m in migrations})
                if unknown:
                    raise MigrationError(
                        f"the database has migrations {unknown} that this wheel does not know: "
                        "it was migrated by a newer version"
                    )
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
    return applied_now


async def pending(dsn: str) -> list[Migration]:
    """The migrations the database at `dsn` has not had yet (all of them on a new database)."""
    async with translated():
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        async with conn:
            cursor = await conn.execute("SELECT to_regclass('wheel_migrations') IS NOT NULL")
            row = await cursor.fetchone()
            if row is None or not row[0]:
                return available()
            cursor = await conn.execute("SELECT number FROM wheel_migrations")
            done = {number for (number,) in await cursor.fetchall()}
    return [m for m in available() if m.number not in done]


async def wait_until_migrated(
    dsn: str, *, poll_s: float = 2.0, waiting: Callable[[str], None] | None = None
) -> None:
    """Return once every migration this wheel knows is applied; meanwhile say what is missing
    (logged once per change, and to `waiting` on every check).

    A node started beside the migration Job (or before `wheel migrate`) waits for it
    here instead of failing and being restarted; so it does while Postgres is away.
    """
    said = ""
    while True:
        try:
            missing = await pending(dsn)
        except StoreError as exc:
            missing, why = [], f"cannot read the schema: {exc}"
        else:
            if not missing:
                return
            why = "run `wheel migrate` (or the migration Job): missing " + ", ".join(
                f"{m.number:04d}_{m.name}" for m in missing
            )
        if waiting is not None:
            waiting(why)
        if why != said:
            log.warning("store.waiting_for_migration", extra={"reason": why})
            said = why
        await asyncio.sleep(poll_s)  # another process migrates: nothing here to await


def _check_unchanged(migration: Migration, name: str, sha256: str) -> None:
    if sha256 != migration.sha256 or name != migration.name:
        raise MigrationError(
            f"migration {migration.number:04d}_{migration.name} was applied as "
            f"{migration.number:04d}_{name} with a different content: "
            "applied migrations must never change; add a new one instead"
        )
