"""Calendars on the wire: what the SDK sends is what the server reads, and a bad request is
refused naming the field as it was sent."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime

import pytest

from wheel._proto.wheel.v1 import calendars_pb2 as cal
from wheel.api.calendars import (
    calendar_from,
    calendar_message,
    calendar_ref,
    calendar_to,
    definition_of,
)
from wheel.errors import InvalidArgument
from wheel.model.calendars import CalendarId, StoredCalendar
from wheel.model.ids import TenantId
from wheel.schedule.calendars import MAX_DATE_ENTRIES, DateRange, HolidaySource

YEAR = date.today().year + 1


def test_what_the_sdk_sends_the_server_reads_and_answers_back() -> None:
    sent = calendar_message(
        "uk-holidays",
        "office",
        [f"{YEAR}-12-24..{YEAR + 1}-01-02", date(YEAR, 6, 1)],
        ["sat", 6],
        ["gb-eng", HolidaySource("US")],
    )
    read = calendar_from(sent)
    assert read.dates == (
        DateRange(date(YEAR, 12, 24), date(YEAR + 1, 1, 2)),
        DateRange(date(YEAR, 6, 1), date(YEAR, 6, 1)),
    )
    assert read.weekdays == frozenset({5, 6})
    assert read.holidays == (HolidaySource("GB", "ENG"), HolidaySource("US"))
    now = datetime.now(UTC)
    stored = StoredCalendar(
        CalendarId(uuid.uuid4()), TenantId(uuid.uuid4()), read, created_at=now, updated_at=now
    )
    assert definition_of(calendar_to(stored)) == read


def _ranges(*pairs: tuple[str, str]) -> list[cal.CalendarDateRange]:
    return [cal.CalendarDateRange(first=first, last=last) for first, last in pairs]


@pytest.mark.parametrize(
    ("calendar", "field"),
    [
        (cal.Calendar(name="c", dates=_ranges(("tomorrow", ""))), "calendar.dates[0].first"),
        (
            cal.Calendar(name="c", dates=_ranges((f"{YEAR}-01-02", f"{YEAR}-01-01"))),
            "calendar.dates[0]",
        ),
        (cal.Calendar(name="c", weekdays=["sat", "caturday"]), "calendar.weekdays[1]"),
        (
            cal.Calendar(name="c", holidays=[cal.HolidaySource(country="XX")]),
            "calendar.holidays[0]",
        ),
        (
            cal.Calendar(name="c", holidays=[cal.HolidaySource(country="GB", subdivision="X")]),
            "calendar.holidays[0]",
        ),
        (cal.Calendar(name="", weekdays=["sat"]), "calendar.name"),
        (cal.Calendar(name="c"), "calendar"),
        (
            cal.Calendar(name="c", dates=_ranges(*[("x", "")] * (MAX_DATE_ENTRIES + 1))),
            "calendar.dates",
        ),
    ],
)
def test_a_bad_definition_is_refused_naming_the_field_as_sent(
    calendar: cal.Calendar, field: str
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        calendar_from(calendar)
    assert refused.value.field == field


def test_a_calendar_is_named_by_its_id_or_its_name() -> None:
    ident = uuid.uuid4()
    assert calendar_ref(str(ident)) == ident
    assert calendar_ref("uk-holidays") == "uk-holidays"
    with pytest.raises(InvalidArgument, match="is required"):
        calendar_ref("")
    with pytest.raises(InvalidArgument, match="neither a calendar id"):
        calendar_ref("a,b")
