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
    expr: CronExpr,
    tz: ZoneInfo,
    rule: DstRule,
    start: datetime,
    end: datetime,
    *,
    limit: int | None = None,
    from_end: bool = False,
) -> list[Occurrence]:
    """Runs with instants in [start, end), sorted, one per instant (dropped runs included).

    Several wall times can land on one instant (a gap collapsing into its end);
    the first in wall-time order is kept.

    With a `limit`, expansion stops after the day (of real time, counted from
    `start`) in which `limit` runs are found — from the end of the window when
    `from_end` — so asking for the next few runs of an every-second job that runs
    only in January costs a day of runs, not the month a large window holds.
    """
    found: dict[datetime, Occurrence] = {}
    chunks = []
    chunk = start
    while chunk < end:
        chunks.append(chunk)
        chunk += _CHUNK
    for chunk in reversed(chunks) if from_end else chunks:
        _expand_chunk(expr, tz, rule, chunk, min(end, chunk + _CHUNK), found)
        if limit is not None and sum(not o.skipped for o in found.values()) >= limit:
            break
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
