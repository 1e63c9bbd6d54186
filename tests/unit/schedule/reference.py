"""A brute-force reference for DST resolution: walk every real instant, read the wall clock.

It shares nothing with wheel.schedule's resolution: it never asks zoneinfo
what a wall time means (no fold, no gap arithmetic); it only converts real
instants to wall times, step by step, and applies the rule as stated:

- a wall time that matches and shows on one real instant runs there;
- one that shows on two real instants (a fold) runs on the first, the last
  or both, per the fold policy;
- when the wall clock jumps forward between two consecutive real instants,
  the matching wall times it jumped over run once, at the instant after the
  jump (gap `shift`), or not at all (gap `skip`).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from wheel.model.jobs import DstFold, DstGap
from wheel.schedule.cron import CronExpr
from wheel.schedule.dst import DstRule

MINUTE = timedelta(minutes=1)


def matches(expr: CronExpr, wall: datetime) -> bool:
    return (
        wall.second in expr.seconds
        and wall.minute in expr.minutes
        and wall.hour in expr.hours
        and expr.matches_day(wall.day, wall.month, (wall.weekday() + 1) % 7)
    )


def offset_at_instant(tz: ZoneInfo, instant: datetime) -> timedelta:
    """The UTC offset in force at a real instant (tz.utcoffset takes a wall time)."""
    offset = instant.astimezone(tz).utcoffset()
    assert offset is not None
    return offset


def walk(
    tz: ZoneInfo, start: datetime, end: datetime, step: timedelta
) -> list[tuple[datetime, datetime]]:
    """(real instant, wall time) for every step in [start, end).

    The offset is read once per minute: zone transitions fall on whole minutes.
    """
    pairs = []
    offset_at: dict[datetime, timedelta] = {}
    instant = start
    while instant < end:
        minute = instant.replace(second=0, microsecond=0)
        if minute not in offset_at:
            offset = offset_at_instant(tz, minute)
            assert offset_at_instant(tz, minute + timedelta(seconds=59)) == offset
            offset_at[minute] = offset
        pairs.append((instant, (instant + offset_at[minute]).replace(tzinfo=None)))
        instant += step
    return pairs


class Walk:
    """Real time walked in `step`s over [start - margin, end + margin): shared by many checks."""

    def __init__(
        self, tz: ZoneInfo, start: datetime, end: datetime, step: timedelta, margin: timedelta
    ) -> None:
        self.start, self.end, self.step = start, end, step
        pairs = walk(tz, start - margin, end + margin, step)
        self.shown: dict[datetime, list[datetime]] = {}
        for instant, wall in pairs:
            self.shown.setdefault(wall, []).append(instant)
        # (instant after the jump, wall times jumped over) for every forward jump
        self.jumps: list[tuple[datetime, list[datetime]]] = []
        for (_, before), (instant, wall) in itertools.pairwise(pairs):
            if wall - before > step:
                skipped, walls = before + step, []
                while skipped < wall:
                    walls.append(skipped)
                    skipped += step
                self.jumps.append((instant, walls))

    def runs(self, expr: CronExpr, rule: DstRule) -> list[datetime]:
        """The instants in [start, end) the rule gives for `expr`."""
        found: set[datetime] = set()
        if rule.gap is DstGap.SHIFT:
            for instant, walls in self.jumps:
                if any(matches(expr, wall) for wall in walls):
                    found.add(instant)
        seconds, minutes = set(expr.seconds), set(expr.minutes)
        for wall, instants in self.shown.items():
            if wall.second not in seconds or wall.minute not in minutes or not matches(expr, wall):
                continue
            if len(instants) == 1 or rule.fold is DstFold.BOTH:
                found.update(instants)
            elif rule.fold is DstFold.FIRST:
                found.add(min(instants))
            else:
                found.add(max(instants))
        return sorted(i for i in found if self.start <= i < self.end)


def transitions(tz: ZoneInfo, first_year: int, last_year: int) -> list[datetime]:
    """Every instant (to the minute) at which `tz`'s offset changes, in the years given."""
    found = []
    instant = datetime(first_year, 1, 1, tzinfo=UTC)
    end = datetime(last_year + 1, 1, 1, tzinfo=UTC)
    step = timedelta(hours=6)
    offset = offset_at_instant(tz, instant)
    while instant < end:
        later = instant + step
        if offset_at_instant(tz, later) != offset:
            low, high = instant, later
            while high - low > MINUTE:
                middle = low + (high - low) / 2
                middle = middle.replace(second=0, microsecond=0)
                if middle <= low:
                    middle = low + MINUTE
                if offset_at_instant(tz, middle) == offset:
                    low = middle
                else:
                    high = middle
            found.append(high)
            offset = offset_at_instant(tz, later)
        instant = later
    return found
