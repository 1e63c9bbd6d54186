"""Calendars in an apply file: `wheel jobs apply -f schedules.toml` reads `[calendars.NAME]`
tables beside the `[jobs.NAME]` ones, so a calendar and the jobs naming it live in one file
(calendars are applied first):

    [calendars.uk-holidays]
    holidays = ["GB-ENG"]
    weekdays = ["sat", "sun"]
    dates = ["2026-12-24..2027-01-02", 2027-04-01]
    description = "the office's closed days"

Each key takes a list or one comma-separated string, as `wheel calendars create`'s
options do; TOML's own dates are read as the dates they are.
"""

from __future__ import annotations

import tomllib
from datetime import date
from typing import TYPE_CHECKING, Any

import click

from wheel.errors import InvalidArgument

if TYPE_CHECKING:
    from wheel.schedule.calendars import Calendar

_KEYS = ("holidays", "weekdays", "dates", "description")


def read_calendars(raw: bytes, option: str = "--file") -> list[Calendar]:
    """The `[calendars.NAME]` tables of a TOML document, each checked as the server would."""
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"not TOML: {exc}", param_hint=f"'{option}'") from None
    tables = document.get("calendars", {})
    if not isinstance(tables, dict):
        raise click.BadParameter(
            "'calendars' must hold [calendars.NAME] tables", param_hint=f"'{option}'"
        )
    return [_calendar(name, table, option) for name, table in tables.items()]


def _calendar(name: str, table: object, option: str) -> Calendar:
    from wheel.schedule.calendars import from_definition, validate

    where = f"[calendars.{name}]"
    try:
        if not isinstance(table, dict):
            raise InvalidArgument(where, "must be a table of holidays, weekdays and dates")
        unknown = sorted(set(table) - set(_KEYS))
        if unknown:
            raise InvalidArgument(unknown[0], f"is not one of {', '.join(_KEYS)}")
        description = table.get("description", "")
        if not isinstance(description, str):
            raise InvalidArgument("description", "must be a string")
        document = {key: _texts(table[key]) for key in _KEYS[:3] if key in table}
        return validate(from_definition(name, document, description))
    except InvalidArgument as exc:
        field = "" if exc.field == where else f"{exc.field}: "
        raise click.BadParameter(
            f"{where}: {field}{exc.reason}", param_hint=f"'{option}'"
        ) from None


def _texts(value: Any) -> Any:
    """TOML's dates as ISO texts, in a list or alone; anything else as it is (then checked)."""
    if isinstance(value, date):
        return [value.isoformat()]
    if isinstance(value, list):
        return [item.isoformat() if isinstance(item, date) else item for item in value]
    return value
