"""`wheel calendars`: the tenant's business calendars, which jobs name to skip or move runs.

    wheel calendars create uk-holidays --holidays GB-ENG --weekdays sat,sun \\
        --dates 2026-12-24..2027-01-02
    wheel calendars days uk-holidays --from 2026-12-01 --to 2027-01-31
    wheel calendars update uk-holidays --version 1 --dates 2026-12-23..2027-01-02
    wheel calendars list | show NAME | delete NAME

--holidays, --weekdays and --dates take comma-separated lists and may be repeated.
A date is YYYY-MM-DD; a range FIRST..LAST includes both. Holidays come from the
`holidays` package: COUNTRY (ISO 3166-1 alpha-2) or COUNTRY-SUBDIVISION (GB-ENG, US-CA).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING, TypeVar

import click

from wheel.cli.session import Session, connected
from wheel.errors import FieldError

if TYPE_CHECKING:
    from rich.console import Console

    from wheel.client import Client
    from wheel.client.types import Calendar, ClosedDay, Page

T = TypeVar("T")

# A field an error names (the client's `dates[2]`, the server's `calendar.dates[2].first`)
# and the option it came from.
_OPTION_OF = (
    (re.compile(r"(calendar\.)?dates\b"), "--dates"),
    (re.compile(r"(calendar\.)?weekdays\b"), "--weekdays"),
    (re.compile(r"(calendar\.)?holidays\b"), "--holidays"),
    (re.compile(r"(calendar\.)?description\b"), "--description"),
    (re.compile(r"(calendar\.)?version\b"), "--version"),
    (re.compile(r"first\b"), "--from"),
    (re.compile(r"last\b"), "--to"),
)


def _call(session: Session, work: Callable[[Client], T]) -> T:
    """`work` through the session, a refused field shown as the option that gave it."""
    try:
        return session.call(work)
    except FieldError as exc:
        for pattern, option in _OPTION_OF:
            if pattern.match(exc.field):
                raise click.BadParameter(f"{exc.field}: {exc.reason}", param_hint=option) from exc
        raise


def _items(values: tuple[str, ...]) -> list[str]:
    """Repeated and comma-separated values, in order: ("sat,sun", "mon") -> [sat, sun, mon]."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _listed(values: tuple[str, ...], clear: bool) -> list[str] | None:
    """For an update: the new list, [] to clear it, None to keep it."""
    if clear:
        return []
    return _items(values) if values else None


def _show(session: Session, calendar: Calendar, said: str = "") -> None:
    def human(console: Console) -> None:
        if said:
            console.print(said)
        console.print(f"name:        {calendar.name}")
        if calendar.description:
            console.print(f"description: {calendar.description}")
        console.print(f"holidays:    {', '.join(h.text() for h in calendar.holidays) or '-'}")
        console.print(f"weekdays:    {', '.join(calendar.weekdays) or '-'}")
        console.print(f"dates:       {', '.join(r.text() for r in calendar.dates) or '-'}")
        console.print(f"version:     {calendar.version}")
        console.print(f"id:          {calendar.id}")

    session.show(calendar, human)


DATES = click.option(
    "--dates", multiple=True, metavar="DATES",
    help="Closed dates and ranges: 2026-12-25,2026-12-24..2027-01-02 (repeatable).",
)  # fmt: skip
WEEKDAYS = click.option(
    "--weekdays", multiple=True, metavar="DAYS",
    help="Closed every week: mon,tue,wed,thu,fri,sat,sun (repeatable).",
)  # fmt: skip
HOLIDAYS = click.option(
    "--holidays", multiple=True, metavar="SOURCES",
    help="Public holidays of COUNTRY or COUNTRY-SUBDIVISION: GB-ENG,US (repeatable).",
)  # fmt: skip
DESCRIPTION = click.option("--description", help="What the calendar is for.")


@click.group()
def calendars() -> None:
    """Business calendars: the days jobs skip (holidays, weekly patterns, listed dates)."""


@calendars.command("create")
@click.argument("name")
@HOLIDAYS
@WEEKDAYS
@DATES
@DESCRIPTION
@connected
def create(
    session: Session,
    name: str,
    holidays: tuple[str, ...],
    weekdays: tuple[str, ...],
    dates: tuple[str, ...],
    description: str | None,
) -> None:
    """A new calendar NAME (unique among the tenant's calendars)."""
    calendar = _call(
        session,
        lambda client: client.create_calendar(
            name,
            holidays=_items(holidays),
            weekdays=_items(weekdays),
            dates=_items(dates),
            description=description or "",
        ),
    )
    _show(session, calendar, said="calendar created")


@calendars.command("show")
@click.argument("name")
@connected
def show(session: Session, name: str) -> None:
    """The calendar NAME (or id): what it closes, and its version."""
    _show(session, _call(session, lambda client: client.get_calendar(name)))


@calendars.command("list")
@click.option("--limit", type=click.IntRange(0, 1000), default=0, help="Page size (0: 100).")
@click.option("--page-token", default="", help="Continue where a listing said 'more'.")
@connected
def list_(session: Session, limit: int, page_token: str) -> None:
    """The tenant's calendars, by name."""
    page = _call(
        session, lambda client: client.list_calendars(page_size=limit, page_token=page_token)
    )
    session.show(page, lambda console: _table(console, page))


def _table(console: Console, page: Page[Calendar]) -> None:
    from rich.table import Table

    if not page.items:
        console.print("no calendars")
        return
    table = Table("name", "holidays", "weekdays", "dates", "version")
    for item in page.items:
        table.add_row(
            item.name,
            ", ".join(h.text() for h in item.holidays) or "-",
            ", ".join(item.weekdays) or "-",
            f"{len(item.dates)} listed" if item.dates else "-",
            str(item.version),
        )
    console.print(table)
    if page.next_page_token:
        console.print(f"more: --page-token {page.next_page_token}")


@calendars.command("update")
@click.argument("name")
@click.option(
    "--version", "expected_version", type=click.IntRange(min=1), required=True,
    help="The version you edited (wheel calendars show); refused if it moved on.",
)  # fmt: skip
@HOLIDAYS
@WEEKDAYS
@DATES
@DESCRIPTION
@click.option("--no-holidays", is_flag=True, help="Close no public holidays.")
@click.option("--no-weekdays", is_flag=True, help="Close no weekday every week.")
@click.option("--no-dates", is_flag=True, help="Close no listed dates.")
@connected
def update(
    session: Session,
    name: str,
    expected_version: int,
    holidays: tuple[str, ...],
    weekdays: tuple[str, ...],
    dates: tuple[str, ...],
    description: str | None,
    no_holidays: bool,
    no_weekdays: bool,
    no_dates: bool,
) -> None:
    """Change calendar NAME: each option given replaces that part (the rest stays).
    Refused if the calendar is no longer at --version. Jobs naming it are re-planned."""
    calendar = _call(
        session,
        lambda client: client.update_calendar(
            name,
            expected_version=expected_version,
            holidays=_listed(holidays, no_holidays),
            weekdays=_listed(weekdays, no_weekdays),
            dates=_listed(dates, no_dates),
            description=description,
        ),
    )
    _show(session, calendar, said="calendar updated")


@calendars.command("delete")
@click.argument("name")
@connected
def delete(session: Session, name: str) -> None:
    """Remove calendar NAME (or id); its name is free again."""
    calendar = _call(session, lambda client: client.delete_calendar(name))
    _show(session, calendar, said="calendar deleted")


@calendars.command("days")
@click.argument("name")
@click.option("--from", "first", metavar="DATE", help="First day (YYYY-MM-DD; default today).")
@click.option("--to", "last", metavar="DATE", help="Last day, included (default: a year on).")
@connected
def days(session: Session, name: str, first: str | None, last: str | None) -> None:
    """The days calendar NAME closes, each with its reason: check a calendar before use."""
    start, end = _day(first, "--from"), _day(last, "--to")
    closed = _call(session, lambda client: client.closed_days(name, first=start, last=end))

    def human(console: Console) -> None:
        _days(console, closed)

    session.show(closed, human)


def _day(text: str | None, option: str) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a date (YYYY-MM-DD)", param_hint=option
        ) from None


def _days(console: Console, closed: list[ClosedDay]) -> None:
    if not closed:
        console.print("no closed days")
        return
    for item in closed:
        console.print(f"{item.day.isoformat()}  {item.day.strftime('%a')}  {item.reason}")
