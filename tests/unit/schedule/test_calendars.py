"""Business calendars against the holidays package's real data, with years taken from
today (never a fixed date), so the cases stay as true next year as this one."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from wheel.errors import InvalidArgument
from wheel.schedule.calendars import (
    MAX_DATE_ENTRIES,
    Calendar,
    DateRange,
    HolidaySource,
    check_name,
    check_span,
    closed_by,
    definition,
    from_definition,
    parse_date_range,
    parse_holiday_source,
    parse_weekdays,
    validate,
)

NEXT_YEAR = date.today().year + 1
ENGLAND = HolidaySource("GB", "ENG")


def first_year_from(start: int, christmas_weekday: int) -> int:
    """The first year from `start` whose 25 December falls on that weekday (0 = Monday)."""
    return next(
        y for y in range(start, start + 15) if date(y, 12, 25).weekday() == christmas_weekday
    )


def test_english_christmas_on_a_saturday_moves_both_holidays_to_the_next_weekdays() -> None:
    year = first_year_from(NEXT_YEAR, 5)
    uk = Calendar("uk", holidays=(ENGLAND,))
    assert uk.closed(date(year, 12, 25)) == "Christmas Day"
    assert uk.closed(date(year, 12, 26)) == "Boxing Day"
    monday, tuesday = date(year, 12, 27), date(year, 12, 28)
    assert {uk.closed(monday), uk.closed(tuesday)} == {
        "Christmas Day (observed)",
        "Boxing Day (observed)",
    }
    assert uk.closed(date(year, 12, 29)) is None


def test_english_boxing_day_on_a_saturday_is_observed_on_the_monday() -> None:
    year = first_year_from(NEXT_YEAR, 4)  # Christmas on a Friday
    uk = Calendar("uk", holidays=(ENGLAND,))
    assert uk.closed(date(year, 12, 28)) == "Boxing Day (observed)"
    assert uk.closed(date(year, 12, 29)) is None


def test_us_thanksgiving_is_the_fourth_thursday_of_november() -> None:
    first = date(NEXT_YEAR, 11, 1)
    thursdays = [
        first + timedelta(days=d) for d in range(30) if (first + timedelta(days=d)).weekday() == 3
    ]
    us = Calendar("us", holidays=(HolidaySource("US"),))
    assert us.closed(thursdays[3]) == "Thanksgiving Day"
    assert us.closed(thursdays[2]) is None
    # A state's own holidays come only with the state.
    california = Calendar("ca", holidays=(HolidaySource("US", "CA"),))
    assert us.closed(thursdays[3] + timedelta(days=1)) is None
    assert california.closed(thursdays[3] + timedelta(days=1)) is not None


def test_a_weekly_pattern_closes_those_weekdays_every_week() -> None:
    weekend = Calendar("weekend", weekdays=parse_weekdays("sat,Sunday"))
    monday = date.today() - timedelta(days=date.today().weekday())
    reasons = [weekend.closed(monday + timedelta(days=d)) for d in range(14)]
    assert reasons == [None] * 5 + ["Saturday", "Sunday"] + [None] * 5 + ["Saturday", "Sunday"]


def test_ranges_across_a_year_end_close_every_day_in_them_inclusively() -> None:
    shutdown = parse_date_range(f"{NEXT_YEAR}-12-24..{NEXT_YEAR + 1}-01-02")
    office = Calendar(
        "office", dates=(shutdown, DateRange(date(NEXT_YEAR, 6, 1), date(NEXT_YEAR, 6, 1)))
    )
    reason = f"a listed date (24 Dec {NEXT_YEAR} \N{EN DASH} 2 Jan {NEXT_YEAR + 1})"
    assert office.closed(date(NEXT_YEAR, 12, 23)) is None
    assert office.closed(date(NEXT_YEAR, 12, 24)) == reason
    assert office.closed(date(NEXT_YEAR, 12, 31)) == reason
    assert office.closed(date(NEXT_YEAR + 1, 1, 1)) == reason
    assert office.closed(date(NEXT_YEAR + 1, 1, 2)) == reason
    assert office.closed(date(NEXT_YEAR + 1, 1, 3)) is None
    assert office.closed(date(NEXT_YEAR, 6, 1)) == f"a listed date (1 Jun {NEXT_YEAR})"


def test_overlapping_ranges_are_found_as_a_scan_finds_them() -> None:
    base = date(NEXT_YEAR, 1, 1)
    ranges = tuple(
        DateRange(base + timedelta(days=start), base + timedelta(days=start + length))
        for start, length in [(0, 40), (3, 2), (10, 1), (50, 0), (45, 20), (100, 3), (90, 5)]
    )
    calendar = Calendar("c", dates=ranges)
    for offset in range(-5, 120):
        day = base + timedelta(days=offset)
        expected = any(day in r for r in ranges)
        assert (calendar.closed(day) is not None) == expected, day


def test_a_holiday_is_named_before_a_listed_range_or_a_weekday() -> None:
    year = first_year_from(NEXT_YEAR, 5)
    calendar = Calendar(
        "c",
        dates=(parse_date_range(f"{year}-12-20..{year}-12-31"),),
        weekdays=frozenset({5, 6}),
        holidays=(ENGLAND,),
    )
    assert calendar.closed(date(year, 12, 25)) == "Christmas Day"
    assert calendar.closed(date(year, 12, 24)).startswith("a listed date")  # type: ignore[union-attr]


def test_closed_by_answers_the_first_calendar_in_order() -> None:
    year = first_year_from(NEXT_YEAR, 5)
    weekend = Calendar("weekend", weekdays=frozenset({5, 6}))
    uk = Calendar("uk", holidays=(ENGLAND,))
    christmas = date(year, 12, 25)  # a Saturday
    assert closed_by([weekend, uk], christmas) == (weekend, "Saturday")
    assert closed_by([uk, weekend], christmas) == (uk, "Christmas Day")
    assert closed_by([uk, weekend], date(year, 12, 29)) is None
    assert closed_by([], christmas) is None


def test_closed_days_lists_each_closed_day_with_its_reason() -> None:
    year = first_year_from(NEXT_YEAR, 5)
    uk = Calendar("uk", weekdays=frozenset({5, 6}), holidays=(ENGLAND,))
    days = dict(uk.closed_days(date(year, 12, 24), date(year, 12, 31)))
    assert sorted(days) == [date(year, 12, d) for d in (25, 26, 27, 28)]
    assert days[date(year, 12, 25)] == "Christmas Day"


def test_the_definition_round_trips_through_its_json_form() -> None:
    calendar = Calendar(
        "uk-holidays",
        dates=(
            parse_date_range(f"{NEXT_YEAR}-12-24..{NEXT_YEAR + 1}-01-02"),
            parse_date_range(f"{NEXT_YEAR}-05-05"),
        ),
        weekdays=frozenset({6, 5}),
        holidays=(ENGLAND, HolidaySource("US")),
        description="closed",
        version=3,
    )
    document = definition(calendar)
    assert document["weekdays"] == ["sat", "sun"]
    assert document["holidays"] == ["GB-ENG", "US"]
    assert from_definition("uk-holidays", document, "closed", 3) == calendar
    assert validate(calendar) is calendar


def test_holiday_sources_are_checked_against_the_package_and_spelled_as_it_spells_them() -> None:
    assert parse_holiday_source("gb-eng") == ENGLAND
    assert parse_holiday_source("US") == HolidaySource("US")
    with pytest.raises(InvalidArgument) as unknown_country:
        parse_holiday_source("XX", "holidays[1]")
    assert unknown_country.value.field == "holidays[1]"
    assert "unknown country" in unknown_country.value.reason
    with pytest.raises(InvalidArgument) as unknown_region:
        parse_holiday_source("GB-XYZ")
    assert "unknown subdivision 'XYZ' of GB" in unknown_region.value.reason
    assert "ENG" in unknown_region.value.reason
    with pytest.raises(InvalidArgument) as three_letters:
        validate(Calendar("c", holidays=(HolidaySource("GBR"),)))
    assert three_letters.value.field == "holidays[0]"


@pytest.mark.parametrize(
    ("calendar", "field", "words"),
    [
        (Calendar("", weekdays=frozenset({5})), "name", "empty"),
        (Calendar("a,b", weekdays=frozenset({5})), "name", "','"),
        (Calendar("a\x00", weekdays=frozenset({5})), "name", "control"),
        (Calendar("x" * 201, weekdays=frozenset({5})), "name", "longer"),
        (Calendar("6f1c1ad4-1b51-4a8f-9d55-0e8d2c7f3a10", weekdays=frozenset({5})), "name", "UUID"),
        (Calendar("c", weekdays=frozenset({7})), "weekdays", "not a weekday"),
        (
            Calendar("c", dates=(DateRange(date(NEXT_YEAR, 1, 2), date(NEXT_YEAR, 1, 1)),)),
            "dates[0]",
            "before",
        ),
        (Calendar("c"), "calendar", "closes no day"),
        (Calendar("c", holidays=(ENGLAND, ENGLAND)), "holidays", "twice"),
        (Calendar("c", weekdays=frozenset({5}), description="d" * 1001), "description", "longer"),
        (
            Calendar(
                "c",
                dates=tuple(
                    DateRange(date(NEXT_YEAR, 1, 1), date(NEXT_YEAR, 1, 1))
                    for _ in range(MAX_DATE_ENTRIES + 1)
                ),
            ),
            "dates",
            "at most",
        ),
    ],
)
def test_validation_names_the_field_and_the_reason(
    calendar: Calendar, field: str, words: str
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        validate(calendar)
    assert refused.value.field == field
    assert words in refused.value.reason


def test_text_forms_are_refused_naming_the_entry() -> None:
    with pytest.raises(InvalidArgument) as bad_weekday:
        from_definition("c", {"weekdays": ["sat", "funday"]})
    assert bad_weekday.value.field == "weekdays[1]"
    assert "unknown weekday 'funday'" in bad_weekday.value.reason
    with pytest.raises(InvalidArgument) as backwards:
        from_definition(
            "c", {"dates": [f"{NEXT_YEAR}-01-05", f"{NEXT_YEAR}-01-05..{NEXT_YEAR}-01-01"]}
        )
    assert backwards.value.field == "dates[1]"
    with pytest.raises(InvalidArgument) as not_a_date:
        parse_date_range("tomorrow")
    assert "not a date" in not_a_date.value.reason
    with pytest.raises(InvalidArgument) as unknown_key:
        from_definition("c", {"weekday": ["sat"]})
    assert unknown_key.value.field == "weekday"
    with pytest.raises(InvalidArgument) as too_many:
        from_definition("c", {"dates": [f"{NEXT_YEAR}-01-01"] * (MAX_DATE_ENTRIES + 1)})
    assert too_many.value.field == "dates"
    check_name("uk-holidays")


def test_a_span_to_list_is_in_order_and_bounded() -> None:
    today = date.today()
    check_span(today, today + timedelta(days=366))
    with pytest.raises(InvalidArgument, match="before"):
        check_span(today, today - timedelta(days=1))
    with pytest.raises(InvalidArgument, match="at most"):
        check_span(today, today + timedelta(days=20 * 366))
