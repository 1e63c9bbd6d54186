"""Cron expressions: parsing, validation that names the field, Jenkins' H.

Five fields (minute hour day-of-month month day-of-week), or six with a
leading seconds field; the aliases `@yearly` `@annually` `@monthly` `@weekly`
`@daily` `@midnight` `@hourly`. A field is a comma list of `*`, `N`, `A-B`,
`*/S`, `A-B/S`, `N/S` (from N to the end), month and weekday names, `?` (as
`*`), and `H`: a value chosen by hashing the job id (`H`, `H(A-B)`, `H/S`,
`H(A-B)/S`), stable for a job, different across jobs — so "hourly" spreads.

wheel parses cron itself rather than through croniter: errors must name the
field and the reason ("day-of-month 32 out of range 1-31"), H needs the job
id, and the DST resolution needs each day's set of wall times, which an
iterator of next instants does not give. croniter serves as an independent
reference in the tests.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass

from wheel.errors import InvalidArgument, excerpt

FIELD = "schedule.cron"


@dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    """Names for low, low+1, ... (months, weekdays)."""
    hash_high: int | None = None
    """Upper bound for a bare H (day-of-month: 28, so every month has it)."""


SECOND = _Spec("second", 0, 59)
MINUTE = _Spec("minute", 0, 59)
HOUR = _Spec("hour", 0, 23)
DAY_OF_MONTH = _Spec("day-of-month", 1, 31, hash_high=28)
MONTH = _Spec("month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun",
                               "jul", "aug", "sep", "oct", "nov", "dec"))  # fmt: skip
DAY_OF_WEEK = _Spec("day-of-week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat"))

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_HASH = re.compile(r"^H(?:\((\d+)-(\d+)\))?(?:/(\d+))?$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class CronExpr:
    """A parsed expression: the allowed values of each field, H resolved."""

    source: str
    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    """0 = Sunday ... 6 = Saturday (7 is folded into 0)."""
    day_of_month_star: bool
    day_of_week_star: bool
    wildcard: bool
    """Debian cron's rule: the minute or hour field starts with `*` (`*/15` included).
    Wildcard expressions run at every real matching instant; fixed-time ones
    once per wall time."""

    def matches_day(self, day_of_month: int, month: int, weekday_sun0: int) -> bool:
        """Vixie cron: when both day fields are restricted, either may match."""
        if month not in self.months:
            return False
        dom = day_of_month in self.days_of_month
        dow = weekday_sun0 in self.days_of_week
        if self.day_of_month_star or self.day_of_week_star:
            return dom and dow
        return dom or dow


_DIGITS = re.compile(r"[0-9]{1,9}")
"""A number in an expression: ASCII digits (str.isdigit also takes '²' and '٢'), bounded."""


def _fail(reason: str) -> InvalidArgument:
    return InvalidArgument(FIELD, reason)


def _hash_value(job_id: uuid.UUID, field: str, size: int) -> int:
    digest = hashlib.blake2b(job_id.bytes + field.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % size


def _number(text: str, spec: _Spec) -> int:
    lowered = text.lower()
    if lowered in spec.names:
        return spec.low + spec.names.index(lowered)
    if not _DIGITS.fullmatch(text):
        raise _fail(f"{spec.name} {excerpt(text)} is not a number" + (
            f" or a name ({', '.join(spec.names[:3])}, ...)" if spec.names else ""))  # fmt: skip
    value = int(text)
    if not spec.low <= value <= spec.high:
        raise _fail(f"{spec.name} {value} out of range {spec.low}-{spec.high}")
    return value


def _step(text: str, spec: _Spec) -> int:
    if not _DIGITS.fullmatch(text) or int(text) == 0:
        raise _fail(f"{spec.name} step {excerpt(text)} is not a positive number")
    return int(text)


def _hashed(match: re.Match[str], spec: _Spec, job_id: uuid.UUID) -> set[int]:
    low, high = spec.low, spec.hash_high or spec.high
    if spec is DAY_OF_WEEK:
        high = 6
    if match[1] is not None:
        low, high = _number(match[1], spec), _number(match[2], spec)
        if low > high:
            raise _fail(f"{spec.name} H({low}-{high}): the range runs backwards")
    if match[3] is None:
        return {low + _hash_value(job_id, spec.name, high - low + 1)}
    step = _step(match[3], spec)
    start = low + _hash_value(job_id, spec.name, min(step, high - low + 1))
    return set(range(start, high + 1, step))


def _part(part: str, spec: _Spec, job_id: uuid.UUID) -> set[int]:
    if not part:
        raise _fail(f"{spec.name} has an empty list item")
    hashed = _HASH.match(part)
    if hashed:
        return _hashed(hashed, spec, job_id)
    base, slash, step_text = part.partition("/")
    step = _step(step_text, spec) if slash else 1
    if base in ("*", "?"):
        low, high = spec.low, spec.high
    elif "-" in base:
        first, _, last = base.partition("-")
        low, high = _number(first, spec), _number(last, spec)
        if low > high:
            raise _fail(f"{spec.name} range {base} runs backwards")
    else:
        low = _number(base, spec)
        high = spec.high if slash else low
    return set(range(low, high + 1, step))


def _field(text: str, spec: _Spec, job_id: uuid.UUID) -> set[int]:
    values: set[int] = set()
    for part in text.split(","):
        values |= _part(part, spec, job_id)
    return values


def parse(expression: str, job_id: uuid.UUID) -> CronExpr:
    """Parse `expression` for `job_id` (H fields hash it); InvalidArgument names the problem."""
    text = expression.strip()
    fields = ALIASES.get(text.lower(), text).split()
    if text.lower() == "@reboot":
        raise _fail("@reboot has no meaning for a scheduler that is never rebooted")
    if text.startswith("@") and text.lower() not in ALIASES:
        raise _fail(f"unknown alias {excerpt(text)} (known: {', '.join(ALIASES)})")
    if len(fields) not in (5, 6):
        raise _fail(
            f"expected 5 fields (minute hour day-of-month month day-of-week) "
            f"or 6 with a leading second, got {len(fields)}"
        )
    seconds_text = fields.pop(0) if len(fields) == 6 else "0"
    minute_text, hour_text, dom_text, month_text, dow_text = fields
    days_of_week = _field(dow_text, DAY_OF_WEEK, job_id)
    if 7 in days_of_week:
        days_of_week = (days_of_week - {7}) | {0}
    return CronExpr(
        source=expression,
        seconds=tuple(sorted(_field(seconds_text, SECOND, job_id))),
        minutes=tuple(sorted(_field(minute_text, MINUTE, job_id))),
        hours=tuple(sorted(_field(hour_text, HOUR, job_id))),
        days_of_month=frozenset(_field(dom_text, DAY_OF_MONTH, job_id)),
        months=frozenset(_field(month_text, MONTH, job_id)),
        days_of_week=frozenset(days_of_week),
        day_of_month_star=dom_text.startswith(("*", "?")),
        day_of_week_star=dow_text.startswith(("*", "?")),
        wildcard=minute_text.startswith("*") or hour_text.startswith("*"),
    )
