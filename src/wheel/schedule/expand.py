"""Expanding a cron expression into its runs between two instants."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from wheel.schedule.cron import CronExpr
from wheel.schedule.dst import DstRule, Occurrence, place

# A transition moves wall clocks by at most a few hours (Lord Howe: 30 min;
# the largest real ones, a day-line move, 24 h): look this far around a window.
_MARGIN = timedelta(hours=26)
# An expression that matches no day in this long never runs.
HORIZON_YEARS = 10


def _days(first: date, last: date) -> Iterator[date]:
    day = first
    while day <= last:
        yield day
        day += timedelta(days=1)


def _walls(expr: CronExpr, day: date, low: datetime, high: datetime) -> Iterator[datetime]:
    """The wall times of `day` that `expr` names, within [low, high] (naive)."""
    for hour in expr.hours:
        start_of_hour = datetime.combine(day, time(hour))
        if start_of_hour + timedelta(hours=1) <= low or start_of_hour > high:
            continue
        for minute in expr.minutes:
            for second in expr.seconds:
                wall = start_of_hour.replace(minute=minute, second=second)
                if low <= wall <= high:
                    yield wall


def expand(
    expr: CronExpr, tz: ZoneInfo, rule: DstRule, start: datetime, end: datetime
) -> list[Occurrence]:
    """Runs with instants in [start, end), sorted, one per instant (dropped runs included).

    Several wall times can land on one instant (a gap collapsing into its end);
    the first in wall-time order is kept.
    """
    low = start.astimezone(tz).replace(tzinfo=None) - _MARGIN
    high = end.astimezone(tz).replace(tzinfo=None) + _MARGIN
    found: dict[datetime, Occurrence] = {}
    for day in _days(low.date(), high.date()):
        weekday_sun0 = (day.weekday() + 1) % 7
        if not expr.matches_day(day.day, day.month, weekday_sun0):
            continue
        for wall in _walls(expr, day, low, high):
            for occurrence in place(wall, tz, rule):
                if start <= occurrence.instant < end:
                    kept = found.get(occurrence.instant)
                    if kept is None or (kept.skipped and not occurrence.skipped):
                        found[occurrence.instant] = occurrence
    return [found[instant] for instant in sorted(found)]


def runs_some_day(expr: CronExpr, after: date) -> bool:
    """Whether any day in the next HORIZON_YEARS matches (`0 0 30 2 *` never does)."""
    last = after.replace(year=after.year + HORIZON_YEARS)
    return any(
        expr.matches_day(day.day, day.month, (day.weekday() + 1) % 7) for day in _days(after, last)
    )


def minimum_spacing(expr: CronExpr) -> timedelta:
    """A lower bound of the time between two consecutive runs (wall clock, DST aside)."""
    times = sorted(
        h * 3600 + m * 60 + s for h in expr.hours for m in expr.minutes for s in expr.seconds
    )
    gaps = [b - a for a, b in itertools.pairwise(times)]
    gaps.append(86_400 - times[-1] + times[0])
    return timedelta(seconds=min(gaps))
