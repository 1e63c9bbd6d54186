"""Expanding a cron expression into its runs between two instants."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from wheel.schedule.cron import CronExpr
from wheel.schedule.dst import DstRule, Occurrence, place

# A transition moves wall clocks by at most a few hours (Lord Howe: 30 min; the
# largest in use, 2 h): look this much further around a window for the wall
# times whose instants may fall inside it.
_SLACK = timedelta(hours=3)
# Windows are expanded a day of real time at a time.
_CHUNK = timedelta(days=1)
# An expression that matches no day in this long never runs.
HORIZON_YEARS = 10


def _days(first: date, last: date) -> Iterator[date]:
    day = first
    while day <= last:
        yield day
        day += timedelta(days=1)


def _walls(expr: CronExpr, low: datetime, high: datetime) -> Iterator[datetime]:
    """The wall times `expr` names in [low, high) (naive), in order."""
    for day in _days(low.date(), high.date()):
        if not expr.matches_day(day.day, day.month, (day.weekday() + 1) % 7):
            continue
        for hour in expr.hours:
            start_of_hour = datetime.combine(day, time(hour))
            if start_of_hour + timedelta(hours=1) <= low or start_of_hour >= high:
                continue
            for minute in expr.minutes:
                for second in expr.seconds:
                    wall = start_of_hour.replace(minute=minute, second=second)
                    if low <= wall < high:
                        yield wall


def _offset(instant: datetime, tz: ZoneInfo) -> timedelta:
    offset = instant.astimezone(tz).utcoffset()
    assert offset is not None
    return offset


def expand(
    expr: CronExpr, tz: ZoneInfo, rule: DstRule, start: datetime, end: datetime
) -> list[Occurrence]:
    """Runs with instants in [start, end), sorted, one per instant (dropped runs included).

    Several wall times can land on one instant (a gap collapsing into its end);
    the first in wall-time order is kept.
    """
    found: dict[datetime, Occurrence] = {}
    chunk = start
    while chunk < end:
        _expand_chunk(expr, tz, rule, chunk, min(end, chunk + _CHUNK), found)
        chunk += _CHUNK
    return [found[instant] for instant in sorted(found)]


def _expand_chunk(
    expr: CronExpr,
    tz: ZoneInfo,
    rule: DstRule,
    start: datetime,
    end: datetime,
    found: dict[datetime, Occurrence],
) -> None:
    before, middle, after = (
        _offset(start - _SLACK, tz),
        _offset(start + (end - start) / 2, tz),
        _offset(end + _SLACK, tz),
    )
    if before == middle == after:
        # No transition near: every wall time is ordinary, one subtraction away.
        low = (start + before).replace(tzinfo=None)
        high = (end + before).replace(tzinfo=None)
        for wall in _walls(expr, low, high):
            instant = (wall - before).replace(tzinfo=UTC)
            found.setdefault(instant, Occurrence(instant, wall))
        return
    low = (start + min(before, after) - _SLACK).replace(tzinfo=None)
    high = (end + max(before, after) + _SLACK).replace(tzinfo=None)
    for wall in _walls(expr, low, high):
        for occurrence in place(wall, tz, rule):
            if start <= occurrence.instant < end:
                kept = found.get(occurrence.instant)
                if kept is None or (kept.skipped and not occurrence.skipped):
                    found[occurrence.instant] = occurrence


def runs_some_day(expr: CronExpr, after: date) -> bool:
    """Whether any day in the next HORIZON_YEARS matches (`0 0 30 2 *` never does)."""
    last = after + timedelta(days=366 * HORIZON_YEARS)  # (not .replace(year=): 29 February)
    return any(
        expr.matches_day(day.day, day.month, (day.weekday() + 1) % 7) for day in _days(after, last)
    )
