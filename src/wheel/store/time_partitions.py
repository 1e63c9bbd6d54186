"""Day partitions of `executions` and `attempts`: created ahead of need, dropped after retention.

Both tables are range-partitioned by the UTC day of `scheduled_for`; their
partitions are named `<table>_YYYYMMDD` and always come in pairs. Retention
is a partition drop, but a day that still holds unfinished work (pending,
dispatched, running or needs_review executions) is kept however old it is:
retention never loses work that has not reached a final state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import psycopg
from psycopg import sql

from wheel.store.pool import Pool
from wheel.store.translate import translated

TABLES = ("executions", "attempts")
# Serialises partition DDL across nodes: CREATE ... IF NOT EXISTS still races.
_DDL_LOCK_KEY = 0x77686565_6C706172  # "wheelpar"
_SUFFIX = re.compile(r"^executions_(\d{8})$")
_ANALYZE_MIN_ROWS = 1000


def day_of(instant: datetime) -> date:
    """The UTC day an instant falls in: the partition that holds it."""
    return instant.astimezone(UTC).date()


def _bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(0), tzinfo=UTC)
    return start, start + timedelta(days=1)


def _name(table: str, day: date) -> sql.Identifier:
    return sql.Identifier(f"{table}_{day:%Y%m%d}")


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    created: list[date] = field(default_factory=list)
    dropped: list[date] = field(default_factory=list)
    kept_unfinished: list[date] = field(default_factory=list)
    """Days past retention kept because they still hold unfinished executions."""


class TimePartitions:
    """Creates and drops day partitions; remembers the days it knows exist."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool
        self._known: set[date] = set()
        self._grown: dict[date, int] = {}
        self._analysed_rows: dict[date, int] = {}

    def forget(self) -> None:
        """Drop the cache (after another node may have dropped partitions)."""
        self._known.clear()

    async def existing(self) -> list[date]:
        """Days that have partitions, ascending."""
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT c.relname FROM pg_inherits i"
                " JOIN pg_class c ON c.oid = i.inhrelid"
                " WHERE i.inhparent = 'executions'::regclass"
            )
            names = [row[0] for row in await cursor.fetchall()]
        days = []
        for name in names:
            match = _SUFFIX.match(str(name))
            if match:
                days.append(datetime.strptime(match[1], "%Y%m%d").date())
        return sorted(days)

    async def note_inserted(self, counts: Mapping[date, int]) -> list[date]:
        """Analyse day partitions that grew a lot since this process last analysed them.

        A freshly bulk-filled partition has no statistics until autovacuum
        gets to it (up to a minute), and meanwhile the planner misjudges
        every probe into it (claims of 1,000 keys took seconds). ANALYZE
        samples a bounded number of rows and does not block writes.
        """
        analysed = []
        for day, count in counts.items():
            grown = self._grown.get(day, 0) + count
            if grown < _ANALYZE_MIN_ROWS or grown < self._analysed_rows.get(day, 0) // 4:
                self._grown[day] = grown
                continue
            async with translated(), self._pool.connection() as conn:
                await conn.execute(sql.SQL("ANALYZE {}").format(_name("executions", day)))
            self._analysed_rows[day] = self._analysed_rows.get(day, 0) + grown
            self._grown[day] = 0
            analysed.append(day)
        return analysed

    async def ensure(self, days: Iterable[date]) -> list[date]:
        """Make sure each day has its partitions; return the days created now."""
        missing = sorted(set(days) - self._known)
        if not missing:
            return []
        created = []
        async with translated(), self._pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK_KEY,))
            cursor = await conn.execute(
                "SELECT relname FROM pg_class WHERE relname = ANY(%s)",
                ([f"executions_{day:%Y%m%d}" for day in missing],),
            )
            present = {str(row[0]) for row in await cursor.fetchall()}
            for day in missing:
                if f"executions_{day:%Y%m%d}" not in present:
                    start, end = _bounds(day)
                    for table in TABLES:
                        await conn.execute(
                            sql.SQL(
                                "CREATE TABLE {} PARTITION OF {} FOR VALUES FROM ({}) TO ({})"
                            ).format(
                                _name(table, day),
                                sql.Identifier(table),
                                sql.Literal(start),
                                sql.Literal(end),
                            )
                        )
                    created.append(day)
        self._known.update(missing)
        return created

    async def maintain(
        self, now: datetime, *, ahead_days: int, retention_days: int
    ) -> MaintenanceReport:
        """Create partitions from today to `ahead_days` ahead; drop days past retention.

        A day is past retention when all of it is older than `retention_days`
        before `now`.
        """
        today = day_of(now)
        report = MaintenanceReport()
        report.created.extend(
            await self.ensure(today + timedelta(days=n) for n in range(ahead_days + 1))
        )
        cutoff = today - timedelta(days=retention_days)
        for day in await self.existing():
            if day >= cutoff:
                break
            if await self._drop_if_finished(day):
                report.dropped.append(day)
            else:
                report.kept_unfinished.append(day)
        return report

    async def _drop_if_finished(self, day: date) -> bool:
        executions = _name("executions", day)
        unfinished = sql.SQL(
            "SELECT EXISTS (SELECT 1 FROM {t} WHERE status = 'pending')"
            " OR EXISTS (SELECT 1 FROM {t} WHERE status IN ('dispatched', 'running'))"
            " OR EXISTS (SELECT 1 FROM {t} WHERE status = 'needs_review')"
        ).format(t=executions)  # each probe is served by a partial index
        async with translated(), self._pool.connection() as conn:
            if await _true(conn, unfinished):
                return False  # decided without taking a lock
            try:
                async with conn.transaction():
                    await conn.execute("SET LOCAL lock_timeout = '2s'")
                    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK_KEY,))
                    # Parents before partitions, the order every query takes them in: no
                    # deadlock with the hot path, which waits out the (short) drop.
                    await conn.execute(
                        sql.SQL(
                            "LOCK TABLE executions, attempts, {}, {} IN ACCESS EXCLUSIVE MODE"
                        ).format(executions, _name("attempts", day))
                    )
                    if await _true(conn, unfinished):  # a retry may have arrived meanwhile
                        return False
                    for table in TABLES:
                        await conn.execute(sql.SQL("DROP TABLE {}").format(_name(table, day)))
            except psycopg.errors.LockNotAvailable:
                return False  # busy: the next maintenance tries again
        self._known.discard(day)
        return True


async def _true(conn: psycopg.AsyncConnection[Any], query: sql.Composed) -> bool:
    row = await (await conn.execute(query)).fetchone()
    return bool(row and row[0])
