"""The SDK's calls about the tenant's business calendars (`AsyncClient` inherits them).

    await client.create_calendar("uk-holidays", holidays=["GB-ENG"], weekdays=["sat", "sun"],
                                 dates=["2026-12-24..2027-01-02"])
    for day in await client.closed_days("uk-holidays"):
        print(day.day, day.reason)

Dates, weekdays and holiday sources are taken as the CLI and apply files write them
(`"2026-12-24..2027-01-02"`, `"sat"`, `"GB-ENG"`) or as values (`DateRange`, `5`,
`HolidaySource("GB", "ENG")`). Reads are retried on an unavailable endpoint; writes are
not: a repeat of an applied create would be refused as a taken name, a repeated delete
as not found, and a repeated update as a version conflict (read the calendar to see
whether it happened).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable
from datetime import date

from wheel._proto.wheel.v1 import calendars_pb2 as cal
from wheel.api.calendars import (
    DateLike,
    HolidayLike,
    WeekdayLike,
    calendar_message,
    definition_of,
)
from wheel.client import requests
from wheel.client import types as t
from wheel.client.transport import Transport
from wheel.timestamps import to_datetime


def calendar_of(message: cal.Calendar) -> t.Calendar:
    definition = definition_of(message)
    return t.Calendar(
        id=uuid.UUID(message.id),
        name=definition.name,
        description=definition.description,
        dates=definition.dates,
        weekdays=tuple(message.weekdays),
        holidays=definition.holidays,
        version=definition.version,
        created_at=to_datetime(message.created_at),
        updated_at=to_datetime(message.updated_at),
    )


class CalendarCalls:
    _transport: Transport

    async def create_calendar(
        self,
        name: str,
        *,
        dates: Iterable[DateLike] = (),
        weekdays: Iterable[WeekdayLike] = (),
        holidays: Iterable[HolidayLike] = (),
        description: str = "",
    ) -> t.Calendar:
        """A new calendar of the tenant; `Conflict` when it has one of that name."""
        request = cal.CreateCalendarRequest(
            calendar=calendar_message(name, description, dates, weekdays, holidays)
        )
        response = await self._transport.call(
            lambda s: s.calendars.CreateCalendar, request, retry=False
        )
        return calendar_of(response)

    async def get_calendar(self, calendar: str) -> t.Calendar:
        """The calendar with this name or id."""
        request = cal.CalendarRef(id=str(calendar))
        response = await self._transport.call(
            lambda s: s.calendars.GetCalendar, request, retry=True
        )
        return calendar_of(response)

    async def list_calendars(
        self, *, page_size: int = 0, page_token: str = ""
    ) -> t.Page[t.Calendar]:
        """One page of the tenant's calendars, by name."""
        request = cal.ListCalendarsRequest(page_size=page_size, page_token=page_token)
        response = await self._transport.call(
            lambda s: s.calendars.ListCalendars, request, retry=True
        )
        return t.Page(
            items=tuple(calendar_of(c) for c in response.calendars),
            next_page_token=response.next_page_token,
        )

    async def calendars(self, *, page_size: int = 0) -> AsyncIterator[t.Calendar]:
        """Every calendar of the tenant: `async for calendar in client.calendars(): ...`."""
        async for found in requests.every_page(
            lambda token: self.list_calendars(page_size=page_size, page_token=token)
        ):
            yield found

    async def update_calendar(
        self,
        calendar: str,
        *,
        expected_version: int,
        dates: Iterable[DateLike] | None = None,
        weekdays: Iterable[WeekdayLike] | None = None,
        holidays: Iterable[HolidayLike] | None = None,
        description: str | None = None,
        base: t.Calendar | None = None,
    ) -> t.Calendar:
        """Replace the calendar's definition if it is still at `expected_version`
        (`VersionConflict` otherwise). Parts not given are kept from `base` (a calendar you
        read) or, without one, from the calendar as read now; its name stays."""
        if base is None:
            base = await self.get_calendar(calendar)
        message = calendar_message(
            base.name,
            base.description if description is None else description,
            base.dates if dates is None else dates,
            base.weekdays if weekdays is None else weekdays,
            base.holidays if holidays is None else holidays,
            ident=str(calendar),
            version=expected_version,
        )
        request = cal.UpdateCalendarRequest(calendar=message)
        response = await self._transport.call(
            lambda s: s.calendars.UpdateCalendar, request, retry=False
        )
        return calendar_of(response)

    async def delete_calendar(self, calendar: str) -> t.Calendar:
        """Remove the calendar (its name is free again); answers it as it was."""
        request = cal.CalendarRef(id=str(calendar))
        response = await self._transport.call(
            lambda s: s.calendars.DeleteCalendar, request, retry=False
        )
        return calendar_of(response)

    async def closed_days(
        self, calendar: str, *, first: date | None = None, last: date | None = None
    ) -> list[t.ClosedDay]:
        """The days the calendar closes from `first` (default: today, UTC) to `last`
        (default: a year on), both included, each with its reason."""
        request = cal.ListClosedDaysRequest(
            calendar=str(calendar),
            first=first.isoformat() if first else "",
            last=last.isoformat() if last else "",
        )
        response = await self._transport.call(
            lambda s: s.calendars.ListClosedDays, request, retry=True
        )
        return [t.ClosedDay(date.fromisoformat(d.date), d.reason) for d in response.days]
