"""wheel.v1.Calendars: a tenant's business calendars, kept and checked through the API.

Every call is scoped to the caller's tenant: a calendar is named by its id or
its name within that tenant, so another tenant's calendar is not found, by id or
by name alike. Definitions are checked whole before anything is written
(wheel.schedule.calendars.validate), and refused naming the request's field.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

from wheel._proto.wheel.v1 import calendars_pb2 as cal
from wheel.api.calendars import calendar_from, calendar_ref, calendar_to
from wheel.api.server.rpc import Rpc, Service
from wheel.errors import InvalidArgument, NotFound
from wheel.model.calendars import StoredCalendar
from wheel.model.ids import TenantId
from wheel.schedule.calendars import check_span, parse_date
from wheel.store import Store

SERVICE = "wheel.v1.Calendars"
_DEFAULT_SPAN = timedelta(days=365)


class CalendarsApi:
    def __init__(
        self, store: Store, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self._store = store
        self._clock = clock

    def service(self) -> Service:
        return Service(
            SERVICE,
            [
                Rpc("CreateCalendar", cal.CreateCalendarRequest, self.create),
                Rpc("GetCalendar", cal.CalendarRef, self.get),
                Rpc("ListCalendars", cal.ListCalendarsRequest, self.list),
                Rpc("UpdateCalendar", cal.UpdateCalendarRequest, self.update),
                Rpc("DeleteCalendar", cal.CalendarRef, self.delete),
                Rpc("ListClosedDays", cal.ListClosedDaysRequest, self.closed_days),
            ],
        )

    async def create(self, request: cal.CreateCalendarRequest, tenant: TenantId) -> cal.Calendar:
        calendar = calendar_from(request.calendar)
        return calendar_to(await self._store.calendars.create(tenant, calendar))

    async def get(self, request: cal.CalendarRef, tenant: TenantId) -> cal.Calendar:
        return calendar_to(await self._find(tenant, request.id))

    async def list(
        self, request: cal.ListCalendarsRequest, tenant: TenantId
    ) -> cal.ListCalendarsResponse:
        found, token = await self._store.calendars.list(
            tenant, page_size=request.page_size, page_token=request.page_token
        )
        return cal.ListCalendarsResponse(
            calendars=[calendar_to(c) for c in found], next_page_token=token
        )

    async def update(self, request: cal.UpdateCalendarRequest, tenant: TenantId) -> cal.Calendar:
        given = request.calendar
        current = await self._find(tenant, given.id or given.name, "calendar.id")
        if given.version == 0:
            raise InvalidArgument(
                "calendar.version", "is required: the version this edit is based on"
            )
        if given.name and given.name != current.name:
            raise InvalidArgument(
                "calendar.name",
                f"calendars are not renamed (jobs name them): this one is {current.name!r}",
            )
        named = cal.Calendar()
        named.CopyFrom(given)
        named.name = current.name
        calendar = calendar_from(named)
        updated = await self._store.calendars.update(tenant, current.id, given.version, calendar)
        return calendar_to(updated)

    async def delete(self, request: cal.CalendarRef, tenant: TenantId) -> cal.Calendar:
        current = await self._find(tenant, request.id)
        return calendar_to(await self._store.calendars.delete(tenant, current.id))

    async def closed_days(
        self, request: cal.ListClosedDaysRequest, tenant: TenantId
    ) -> cal.ListClosedDaysResponse:
        first = parse_date(request.first, "first") if request.first else self._clock().date()
        if request.last:
            last = parse_date(request.last, "last")
        else:
            last = first + min(_DEFAULT_SPAN, date.max - first)
        check_span(first, last)
        stored = await self._find(tenant, request.calendar, "calendar")
        return cal.ListClosedDaysResponse(
            days=[
                cal.ClosedDay(date=day.isoformat(), reason=reason)
                for day, reason in stored.calendar.closed_days(first, last)
            ]
        )

    async def _find(self, tenant: TenantId, text: str, field: str = "id") -> StoredCalendar:
        ref = calendar_ref(text, field)
        if not isinstance(ref, str):
            return await self._store.calendars.get(tenant, ref)
        found = await self._store.calendars.named(tenant, ref)
        if found is None:
            raise NotFound("calendar", repr(ref))
        return found
