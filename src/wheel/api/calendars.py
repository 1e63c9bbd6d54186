"""Business calendars on the wire: `calendars.proto`'s messages and the definitions of
`wheel.schedule.calendars`, both ways, for the server and the SDK alike.

The SDK reaches the definitions (`Calendar`, `DateRange`, `HolidaySource`) through here,
the contract both sides share, as it reaches the job model through `wheel.model`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import date

from wheel._proto.wheel.v1 import calendars_pb2 as cal
from wheel.errors import InvalidArgument
from wheel.model.calendars import CalendarId, StoredCalendar
from wheel.schedule.calendars import (
    MAX_DATE_ENTRIES,
    WEEKDAY_NAMES,
    Calendar,
    DateRange,
    HolidaySource,
    check_name,
    holiday_source,
    parse_date,
    parse_date_range,
    parse_holiday_source,
    parse_weekday,
    validate,
    weekday_names,
)
from wheel.timestamps import to_timestamp

__all__ = [
    "Calendar",
    "DateLike",
    "DateRange",
    "HolidayLike",
    "HolidaySource",
    "WeekdayLike",
    "calendar_from",
    "calendar_message",
    "calendar_ref",
    "calendar_to",
    "definition_of",
    "parse_weekday",
]

DateLike = DateRange | date | str
"""A closed date or range: `DateRange`, a `date`, or `"2026-12-24..2027-01-02"`."""
WeekdayLike = int | str
"""0 = Monday ... 6 = Sunday, or `"sat"` / `"Saturday"`."""
HolidayLike = HolidaySource | str
"""`HolidaySource("GB", "ENG")` or `"GB-ENG"`."""


# -- the server's side ---------------------------------------------------------------------------


def calendar_to(stored: StoredCalendar) -> cal.Calendar:
    calendar = stored.calendar
    return cal.Calendar(
        id=str(stored.id),
        name=calendar.name,
        description=calendar.description,
        dates=[
            cal.CalendarDateRange(first=r.first.isoformat(), last=r.last.isoformat())
            for r in calendar.dates
        ],
        weekdays=weekday_names(calendar.weekdays),
        holidays=[
            cal.HolidaySource(country=s.country, subdivision=s.subdivision)
            for s in calendar.holidays
        ],
        version=calendar.version,
        created_at=to_timestamp(stored.created_at),
        updated_at=to_timestamp(stored.updated_at),
    )


def calendar_from(message: cal.Calendar, prefix: str = "calendar.") -> Calendar:
    """The definition a request carries, valid, or InvalidArgument naming its field as sent."""
    if len(message.dates) > MAX_DATE_ENTRIES:  # before parsing them all
        raise InvalidArgument(
            f"{prefix}dates",
            f"{len(message.dates)} entries; at most {MAX_DATE_ENTRIES} are allowed",
        )
    dates = []
    for index, given in enumerate(message.dates):
        field = f"{prefix}dates[{index}]"
        first = parse_date(given.first, f"{field}.first")
        last = parse_date(given.last, f"{field}.last") if given.last else first
        dates.append(DateRange(first, last))
    calendar = Calendar(
        name=message.name,
        dates=tuple(dates),
        weekdays=frozenset(
            parse_weekday(text, f"{prefix}weekdays[{index}]")
            for index, text in enumerate(message.weekdays)
        ),
        holidays=tuple(
            holiday_source(given.country, given.subdivision, f"{prefix}holidays[{index}]")
            for index, given in enumerate(message.holidays)
        ),
        description=message.description,
    )
    try:
        return validate(calendar)
    except InvalidArgument as exc:
        field = exc.field if exc.field.startswith(prefix) else f"{prefix}{exc.field}"
        if exc.field == "calendar":
            field = prefix.rstrip(".") or "calendar"
        raise InvalidArgument(field, exc.reason) from None


def calendar_ref(text: str, field: str = "id") -> CalendarId | str:
    """A calendar named by its id (a UUID) or by its name: the id, or the name to look up."""
    if not text:
        raise InvalidArgument(field, "is required")
    try:
        return CalendarId(uuid.UUID(text))
    except ValueError:
        pass
    try:
        check_name(text, field)
    except InvalidArgument as exc:
        reason = f"is neither a calendar id (a UUID) nor a name: {exc.reason}"
        raise InvalidArgument(field, reason) from None
    return text


# -- the SDK's side ------------------------------------------------------------------------------


def definition_of(message: cal.Calendar) -> Calendar:
    """The definition a server's answer carries (checked when it was written)."""
    return Calendar(
        name=message.name,
        dates=tuple(parse_date_range(_range_text(r)) for r in message.dates),
        weekdays=frozenset(parse_weekday(w) for w in message.weekdays),
        holidays=tuple(HolidaySource(h.country, h.subdivision) for h in message.holidays),
        description=message.description,
        version=message.version,
    )


def _range_text(message: cal.CalendarDateRange) -> str:
    return f"{message.first}..{message.last}" if message.last else message.first


def calendar_message(
    name: str,
    description: str,
    dates: Iterable[DateLike],
    weekdays: Iterable[WeekdayLike],
    holidays: Iterable[HolidayLike],
    *,
    ident: str = "",
    version: int = 0,
) -> cal.Calendar:
    ranges = [_date_range(item, f"dates[{i}]") for i, item in enumerate(dates)]
    return cal.Calendar(
        id=ident,
        name=name,
        description=description,
        dates=[
            cal.CalendarDateRange(first=r.first.isoformat(), last=r.last.isoformat())
            for r in ranges
        ],
        weekdays=[_weekday(w) for w in weekdays],
        holidays=[_holiday(item, f"holidays[{i}]") for i, item in enumerate(holidays)],
        version=version,
    )


def _date_range(item: DateLike, field: str) -> DateRange:
    if isinstance(item, DateRange):
        return item
    if isinstance(item, date):
        return DateRange(item, item)
    return parse_date_range(item, field)


def _weekday(item: WeekdayLike) -> str:
    """As the server reads it (it checks the name, and names the field when it is wrong)."""
    if isinstance(item, int):
        return WEEKDAY_NAMES[item] if 0 <= item <= 6 else str(item)
    return item


def _holiday(item: HolidayLike, field: str) -> cal.HolidaySource:
    source = item if isinstance(item, HolidaySource) else parse_holiday_source(item, field)
    return cal.HolidaySource(country=source.country, subdivision=source.subdivision)
