"""Business calendars: the days a tenant names as closed, and why each one is.

A calendar closes a day for one of three reasons, checked in this order so the
most specific one is told:

    holidays   a public holiday of a country or region, from the `holidays`
               package ("Christmas Day", "Boxing Day (observed)"): holiday rules
               change by law and are data to keep current, never rules to write;
    dates      a listed date or inclusive range ("a listed date (24 Dec 2026 to
               2 Jan 2027)", with an en dash);
    weekdays   a weekly pattern ("Saturday").

    >>> uk = Calendar("uk-holidays", weekdays=frozenset({5, 6}),
    ...               holidays=(HolidaySource("GB", "ENG"),))
    >>> uk.closed(date(2026, 12, 25))
    'Christmas Day'

A calendar knows nothing of zones: a day is a date, and the job that names the
calendar says in which zone its instants fall on which date.

Evaluation is cheap because the materialiser asks once per occurrence: each
(country, subdivision, year)'s holidays are computed once per process and kept
as a plain dict, and listed dates are searched by bisection.

Validation (`validate`, and the `parse_*` functions for the text forms that
the CLI, apply files and the store use) raises InvalidArgument naming the field.
"""

from __future__ import annotations

import bisect
import functools
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import holidays as holidays_package

from wheel.errors import InvalidArgument, excerpt

MAX_NAME_LENGTH = 200
MAX_DESCRIPTION_LENGTH = 1000
MAX_DATE_ENTRIES = 1000
MAX_HOLIDAY_SOURCES = 20
MAX_DAYS_LISTED = 3700
"""`closed_days` answers at most this many days (about ten years) at a time."""

WEEKDAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WEEKDAY_TITLES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_EN_DASH = " \N{EN DASH} "


def day_text(day: date) -> str:
    """`24 Dec 2026`: the same in every locale (strftime's %b is not)."""
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


@dataclass(frozen=True)
class DateRange:
    """Closed days from `first` to `last`, both included; one date is a range of one day."""

    first: date
    last: date

    def __contains__(self, day: object) -> bool:
        return isinstance(day, date) and self.first <= day <= self.last

    def text(self) -> str:
        """`2026-12-24..2027-01-02`, or `2026-12-25` for one day: what `parse_date_range` reads."""
        if self.first == self.last:
            return self.first.isoformat()
        return f"{self.first.isoformat()}..{self.last.isoformat()}"

    def reason(self) -> str:
        if self.first == self.last:
            return f"a listed date ({day_text(self.first)})"
        return f"a listed date ({day_text(self.first)}{_EN_DASH}{day_text(self.last)})"


@dataclass(frozen=True)
class HolidaySource:
    """Public holidays as `holidays.country_holidays(country, subdiv=subdivision)` gives them."""

    country: str
    """ISO 3166-1 alpha-2, e.g. "GB"."""
    subdivision: str = ""
    """e.g. "ENG"; "" = the whole country's holidays."""

    def text(self) -> str:
        """`GB-ENG`, or `US` for a whole country: what `parse_holiday_source` reads."""
        return f"{self.country}-{self.subdivision}" if self.subdivision else self.country

    def holiday(self, day: date) -> str | None:
        """The holiday's name on `day` ("Christmas Day"), None on an ordinary day."""
        return _holidays_of(self.country, self.subdivision, day.year).get(day)


@functools.lru_cache(maxsize=4096)
def _holidays_of(country: str, subdivision: str, year: int) -> Mapping[date, str]:
    """One year's holidays of one source, computed once: a plain dict is far cheaper to ask
    than a holidays object, which expands itself (and locks) on lookups."""
    found = holidays_package.country_holidays(
        country, subdiv=subdivision or None, years=year, expand=False
    )
    return dict(found.items())


@dataclass(frozen=True)
class _DateIndex:
    """Listed ranges sorted by first day, with the latest last day among each prefix, so a
    lookup bisects to the ranges starting on or before the day and walks back only while
    one of them may still reach it (overlapping ranges are allowed)."""

    ranges: tuple[DateRange, ...]
    firsts: tuple[date, ...]
    reach: tuple[date, ...]

    @classmethod
    def of(cls, ranges: Sequence[DateRange]) -> _DateIndex:
        ordered = tuple(sorted(ranges, key=lambda r: (r.first, r.last)))
        reach: list[date] = []
        for one in ordered:
            reach.append(max(reach[-1], one.last) if reach else one.last)
        return cls(ordered, tuple(r.first for r in ordered), tuple(reach))

    def find(self, day: date) -> DateRange | None:
        index = bisect.bisect_right(self.firsts, day) - 1
        while index >= 0 and self.reach[index] >= day:
            if day <= self.ranges[index].last:
                return self.ranges[index]
            index -= 1
        return None


@dataclass(frozen=True)
class Calendar:
    """A tenant's named business calendar: the days it closes, and why.

    Built freely (the store loads stored calendars without re-checking them);
    `validate` checks one at the edges where a person wrote it.
    """

    name: str
    dates: tuple[DateRange, ...] = ()
    """Listed closed dates and inclusive ranges."""
    weekdays: frozenset[int] = frozenset()
    """Closed every week: date.weekday() numbers, 0 = Monday ... 6 = Sunday."""
    holidays: tuple[HolidaySource, ...] = ()
    """Public holidays of these countries or regions are closed."""
    description: str = ""
    version: int = 0
    """The stored definition's version (0: not stored); updates name the version they edit."""

    @functools.cached_property
    def _index(self) -> _DateIndex:
        return _DateIndex.of(self.dates)

    def closed(self, day: date) -> str | None:
        """Why `day` is not a business day ("Christmas Day", "Saturday", "a listed date
        (24 Dec 2026 to 2 Jan 2027)", with an en dash); None when it is one."""
        for source in self.holidays:
            name = source.holiday(day)
            if name is not None:
                return name
        listed = self._index.find(day)
        if listed is not None:
            return listed.reason()
        if day.weekday() in self.weekdays:
            return _WEEKDAY_TITLES[day.weekday()]
        return None

    def closed_days(self, first: date, last: date) -> Iterator[tuple[date, str]]:
        """Each closed day from `first` to `last` (inclusive) with its reason, in order."""
        for offset in range((last - first).days + 1):
            day = first + timedelta(days=offset)
            reason = self.closed(day)
            if reason is not None:
                yield day, reason


def closed_by(calendars: Sequence[Calendar], day: date) -> tuple[Calendar, str] | None:
    """The first of `calendars` (in the given order) that closes `day`, with its reason."""
    for calendar in calendars:
        reason = calendar.closed(day)
        if reason is not None:
            return calendar, reason
    return None


# --- validation ------------------------------------------------------------------------


def check_name(name: str, field: str = "name") -> None:
    """A calendar's name: as a job's (not empty, bounded, printable, not a UUID, since
    calendars are addressed by id or name), and without commas, which separate the
    calendars a job names on the command line."""
    if not name.strip():
        raise InvalidArgument(field, "must not be empty")
    if name != name.strip():
        raise InvalidArgument(field, "must not start or end with spaces")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidArgument(field, f"longer than {MAX_NAME_LENGTH} characters")
    if not name.isprintable():
        raise InvalidArgument(field, "must not contain control characters")
    if "," in name:
        raise InvalidArgument(field, "must not contain ',' (it separates calendar names)")
    try:
        uuid.UUID(name)
    except ValueError:
        return
    raise InvalidArgument(field, "must not be a UUID: calendars are addressed by id or name")


def validate(calendar: Calendar) -> Calendar:
    """`calendar` if every field holds, else InvalidArgument naming the first that does not."""
    check_name(calendar.name)
    if len(calendar.description) > MAX_DESCRIPTION_LENGTH:
        raise InvalidArgument("description", f"longer than {MAX_DESCRIPTION_LENGTH} characters")
    if any(not c.isprintable() and c not in "\n\t" for c in calendar.description):
        raise InvalidArgument("description", "must not contain control characters")
    if len(calendar.dates) > MAX_DATE_ENTRIES:
        raise InvalidArgument(
            "dates", f"{len(calendar.dates)} entries; at most {MAX_DATE_ENTRIES} are allowed"
        )
    for index, listed in enumerate(calendar.dates):
        if listed.last < listed.first:
            raise InvalidArgument(
                f"dates[{index}]",
                f"ends ({listed.last.isoformat()}) before it starts ({listed.first.isoformat()})",
            )
    for number in calendar.weekdays:
        if not 0 <= number <= 6:
            raise InvalidArgument(
                "weekdays", f"{number} is not a weekday (0 = Monday ... 6 = Sunday)"
            )
    if len(calendar.holidays) > MAX_HOLIDAY_SOURCES:
        raise InvalidArgument("holidays", f"at most {MAX_HOLIDAY_SOURCES} sources are allowed")
    for index, source in enumerate(calendar.holidays):
        canonical = holiday_source(source.country, source.subdivision, f"holidays[{index}]")
        if canonical != source:
            raise InvalidArgument(
                f"holidays[{index}]", f"write {canonical.text()!r} (as the holidays package does)"
            )
    if len(set(calendar.holidays)) != len(calendar.holidays):
        raise InvalidArgument("holidays", "names a source twice")
    if calendar.version < 0:
        raise InvalidArgument("version", "must not be negative")
    if not (calendar.dates or calendar.weekdays or calendar.holidays):
        raise InvalidArgument("calendar", "closes no day: give dates, weekdays or holidays")
    return calendar


@functools.cache
def _supported() -> dict[str, dict[str, str]]:
    """Country code -> {upper-cased subdivision: the package's spelling}, two-letter codes only."""
    return {
        country: {sub.upper(): sub for sub in subdivisions}
        for country, subdivisions in holidays_package.list_supported_countries().items()
        if len(country) == 2
    }


def holiday_source(country: str, subdivision: str, field: str) -> HolidaySource:
    """The source the holidays package knows as (`country`, `subdivision`), spelled as it
    spells them (any case accepted); InvalidArgument naming `field` for one it does not know."""
    code = country.strip().upper()
    supported = _supported()
    if code not in supported:
        raise InvalidArgument(
            field,
            f"unknown country {excerpt(country)}: give an ISO 3166-1 alpha-2 code the "
            "holidays package supports, e.g. 'GB' or 'US'",
        )
    wanted = subdivision.strip()
    if not wanted:
        return HolidaySource(code)
    spelled = supported[code].get(wanted.upper())
    if spelled is None:
        known = ", ".join(sorted(supported[code].values())[:12]) or "none"
        more = ", ..." if len(supported[code]) > 12 else ""
        raise InvalidArgument(
            field, f"unknown subdivision {excerpt(subdivision)} of {code} (known: {known}{more})"
        )
    return HolidaySource(code, spelled)


def parse_holiday_source(text: str, field: str = "holidays") -> HolidaySource:
    """`GB-ENG` (a country's region) or `US` (the whole country)."""
    country, _, subdivision = text.strip().partition("-")
    return holiday_source(country, subdivision, field)


def parse_date(text: str, field: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise InvalidArgument(field, f"{excerpt(text)} is not a date (YYYY-MM-DD)") from None


def parse_date_range(text: str, field: str = "dates") -> DateRange:
    """`2026-12-24..2027-01-02` (inclusive) or `2026-12-25` (one day)."""
    first_text, dots, last_text = text.partition("..")
    first = parse_date(first_text, field)
    last = parse_date(last_text, field) if dots else first
    if last < first:
        raise InvalidArgument(
            field,
            f"{excerpt(text)} ends ({last.isoformat()}) before it starts ({first.isoformat()})",
        )
    return DateRange(first, last)


def parse_weekday(text: str, field: str = "weekdays") -> int:
    """`sat`, `Saturday` (any case): date.weekday()'s number."""
    word = text.strip().lower()
    for number, (short, title) in enumerate(zip(WEEKDAY_NAMES, _WEEKDAY_TITLES, strict=True)):
        if word in (short, title.lower()):
            return number
    raise InvalidArgument(field, f"unknown weekday {excerpt(text)}: use {', '.join(WEEKDAY_NAMES)}")


def parse_weekdays(text: str, field: str = "weekdays") -> frozenset[int]:
    """`sat,sun`: the weekday numbers; an empty text is no weekday."""
    return frozenset(parse_weekday(word, field) for word in text.split(",") if word.strip())


def weekday_names(weekdays: frozenset[int]) -> list[str]:
    """The numbers as `parse_weekday` reads them, Monday first."""
    return [WEEKDAY_NAMES[number] for number in sorted(weekdays)]


def check_span(first: date, last: date, field: str = "last") -> None:
    """A span `closed_days` answers: in order, and at most MAX_DAYS_LISTED days."""
    if last < first:
        raise InvalidArgument(field, f"{last.isoformat()} is before {first.isoformat()}")
    if (last - first).days + 1 > MAX_DAYS_LISTED:
        raise InvalidArgument(field, f"at most {MAX_DAYS_LISTED} days are listed at a time")


# --- the stored and written forms ------------------------------------------------------


def definition(calendar: Calendar) -> dict[str, Any]:
    """What a calendar closes, as JSON (the store's column and apply files' body):
    `{"dates": ["2026-12-24..2027-01-02"], "weekdays": ["sat", "sun"], "holidays": ["GB-ENG"]}`."""
    return {
        "dates": [listed.text() for listed in calendar.dates],
        "weekdays": weekday_names(calendar.weekdays),
        "holidays": [source.text() for source in calendar.holidays],
    }


def from_definition(
    name: str, document: Mapping[str, Any], description: str = "", version: int = 0
) -> Calendar:
    """The calendar that `definition` wrote, or a person wrote in an apply file: each entry
    parsed, InvalidArgument naming the entry (`dates[2]`) for one that does not hold."""
    unknown = sorted(set(document) - {"dates", "weekdays", "holidays"})
    if unknown:
        raise InvalidArgument(unknown[0], "unknown field (dates, weekdays or holidays)")
    dates = _strings(document, "dates")
    if len(dates) > MAX_DATE_ENTRIES:
        raise InvalidArgument(
            "dates", f"{len(dates)} entries; at most {MAX_DATE_ENTRIES} are allowed"
        )
    return Calendar(
        name=name,
        dates=tuple(parse_date_range(text, f"dates[{i}]") for i, text in enumerate(dates)),
        weekdays=frozenset(
            parse_weekday(text, f"weekdays[{i}]")
            for i, text in enumerate(_strings(document, "weekdays"))
        ),
        holidays=tuple(
            parse_holiday_source(text, f"holidays[{i}]")
            for i, text in enumerate(_strings(document, "holidays"))
        ),
        description=description,
        version=version,
    )


def _strings(document: Mapping[str, Any], key: str) -> list[str]:
    value = document.get(key, [])
    if isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidArgument(key, "must be a list of texts")
    return value
