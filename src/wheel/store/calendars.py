"""A tenant's business calendars: one row each, the definition as JSON.

Calendars are addressed by id or by name (unique per tenant); every statement
names the tenant, so another tenant's calendar is never seen, named or changed.
An update names the version it was based on and is refused when that is no
longer current, as a job's is. A deleted calendar's row goes (it has no history;
the runs it skipped keep their own reasons), freeing its name.

Jobs name calendars: an update and a delete each run in one transaction with the
two hooks below, where what depends on a calendar is kept true with it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from wheel.errors import Conflict, InvalidTransition, NotFound, VersionConflict
from wheel.model.calendars import CalendarId, StoredCalendar, new_calendar_id
from wheel.model.ids import TenantId
from wheel.schedule.calendars import Calendar, definition, from_definition
from wheel.store import pagination
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.translate import translated

_NAME_CONSTRAINT = "calendars_tenant_name"


class CalendarNameTaken(Conflict):
    """Another of the tenant's calendars has this name: names are unique per tenant."""

    def __init__(self, name: str, field: str = "name") -> None:
        super().__init__(f"{field}: a calendar named {name!r} exists (names are unique per tenant)")
        self.name = name
        self.field = field


def calendar_from_row(row: dict[str, Any]) -> StoredCalendar:
    """The stored calendar of a row (not validated again: it was when written)."""
    calendar = from_definition(row["name"], row["definition"], row["description"], row["version"])
    return StoredCalendar(
        id=CalendarId(row["id"]),
        tenant_id=TenantId(row["tenant_id"]),
        calendar=calendar,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


class Calendars:
    """Business calendars, per tenant. Callers validate definitions before storing them."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def create(self, tenant_id: TenantId, calendar: Calendar) -> StoredCalendar:
        params = {
            "id": new_calendar_id(),
            "tenant_id": tenant_id,
            "name": calendar.name,
            "description": calendar.description,
            "definition": Jsonb(definition(calendar)),
        }
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            try:
                await cursor.execute(sql("insert_calendar"), params)
            except psycopg.errors.UniqueViolation as exc:
                if exc.diag.constraint_name == _NAME_CONSTRAINT:
                    raise CalendarNameTaken(calendar.name) from None
                raise
            row = await cursor.fetchone()
        assert row is not None  # INSERT ... RETURNING
        return calendar_from_row(row)

    async def get(self, tenant_id: TenantId, calendar_id: CalendarId) -> StoredCalendar:
        """The calendar, or NotFound (also when it is another tenant's)."""
        row = await self._one(sql("calendar_by_id"), {"id": calendar_id, "tenant_id": tenant_id})
        if row is None:
            raise NotFound("calendar", calendar_id)
        return calendar_from_row(row)

    async def named(self, tenant_id: TenantId, name: str) -> StoredCalendar | None:
        """The tenant's calendar of this name, if any."""
        row = await self._one(sql("calendar_by_name"), {"tenant_id": tenant_id, "name": name})
        return calendar_from_row(row) if row is not None else None

    async def by_names(
        self, tenant_id: TenantId, names: Collection[str]
    ) -> dict[str, StoredCalendar]:
        """The tenant's calendars among `names`, by name (a name it has none of is left out)."""
        if not names:
            return {}
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(
                sql("calendars_by_name"), {"tenant_id": tenant_id, "names": list(names)}
            )
            rows = await cursor.fetchall()
        return {row["name"]: calendar_from_row(row) for row in rows}

    async def list(
        self, tenant_id: TenantId, *, page_size: int = 0, page_token: str = ""
    ) -> tuple[list[StoredCalendar], str]:
        """A page of the tenant's calendars by name, and the next page's token ('' at the end)."""
        limit = pagination.page_size(page_size)
        after = pagination.decode_text(page_token) if page_token else ""
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(
                sql("list_calendars"),
                {"tenant_id": tenant_id, "after_name": after, "limit": limit},
            )
            found = [calendar_from_row(row) for row in await cursor.fetchall()]
        token = pagination.encode_text(found[-1].name) if len(found) == limit else ""
        return found, token

    async def update(
        self,
        tenant_id: TenantId,
        calendar_id: CalendarId,
        expected_version: int,
        calendar: Calendar,
    ) -> StoredCalendar:
        """Replace the definition (not the name: jobs name calendars by it) if the calendar is
        still at `expected_version`; version + 1. VersionConflict when it is not."""
        params = {
            "id": calendar_id,
            "tenant_id": tenant_id,
            "expected_version": expected_version,
            "description": calendar.description,
            "definition": Jsonb(definition(calendar)),
        }
        async with translated(), self._pool.connection() as conn, conn.transaction():
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("update_calendar"), params)
            row = await cursor.fetchone()
            if row is not None:
                updated = calendar_from_row(row)
                await self.after_update(conn, updated)
        if row is None:
            current = await self.get(tenant_id, calendar_id)
            raise VersionConflict("calendar", calendar_id, expected_version, current.version)
        return updated

    async def delete(self, tenant_id: TenantId, calendar_id: CalendarId) -> StoredCalendar:
        """Remove the calendar; NotFound when the tenant has none with this id."""
        async with translated(), self._pool.connection() as conn, conn.transaction():
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(
                sql("delete_calendar"), {"id": calendar_id, "tenant_id": tenant_id}
            )
            row = await cursor.fetchone()
            if row is not None:
                deleted = calendar_from_row(row)
                await self.before_delete_commits(conn, deleted)
        if row is None:
            raise NotFound("calendar", calendar_id)
        return deleted

    # --- hooks: what depends on a calendar, kept true in the same transaction -----------

    async def after_update(
        self, conn: psycopg.AsyncConnection[Any], updated: StoredCalendar
    ) -> None:
        """HOOK (calendar updated, in its transaction): re-plan the jobs that name it, as a
        schedule edit does: their version grows (wheel.scheduler.materialiser)."""
        await conn.execute(
            sql("replan_jobs_naming_calendar"),
            {"tenant_id": updated.tenant_id, "name": updated.calendar.name},
        )

    async def before_delete_commits(
        self, conn: psycopg.AsyncConnection[Any], deleted: StoredCalendar
    ) -> None:
        """HOOK (calendar deleted, in its transaction, before it commits): refuse (raise, so
        the delete rolls back) when a job still names it, naming the jobs."""
        cursor = await conn.execute(
            sql("jobs_naming_calendar"),
            {"tenant_id": deleted.tenant_id, "name": deleted.calendar.name, "limit": 6},
        )
        names = [row[0] for row in await cursor.fetchall()]
        if names:
            listed = ", ".join(repr(n) for n in names[:5]) + (" and more" if len(names) > 5 else "")
            raise InvalidTransition(
                "calendar",
                deleted.calendar.name,
                f"named by job{'s' if len(names) > 1 else ''} {listed} "
                "(take it out of them first: `wheel jobs update --no-calendars`)",
                "delete",
            )

    async def _one(self, query: Any, params: dict[str, Any]) -> dict[str, Any] | None:
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(query, params)
            return await cursor.fetchone()
