"""The shortest real time between two runs of a cron schedule: what bounds its smear.

A smeared run fires at its instant plus the job's offset; if the offset is
not shorter than the time to the next run, the smeared run fires after the
next run's instant — it has moved into another period. On the wall clock the
spacing of `0 1,3 * * *` is two hours; in real time it is one hour on the
night New York's clocks go forward, and a wildcard expression's two passes
of a repeated hour are one transition apart (30 minutes in Lord Howe).

DST shortens a gap between runs in two ways only:

- clocks going forward (a gap `[G, G+Δ)` of wall time): the runs on either
  side come Δ closer in real time, and a fixed-time run shifted out of the
  gap lands at its end, close to the runs around it;
- clocks going back (a fold `[T-Δ, T)` passed twice) under fold `both`: the
  last run of the first pass and the first of the second are
  `(T - last) + (first - (T-Δ))` apart. Fold `first` or `last` only
  lengthens gaps.

Both depend only on the expression's times of day and the transition's wall
time and size, so this needs no expansion: every transition of the zone in
the next `HORIZON_YEARS` is reduced to its shape, and each shape's gaps are
computed from the times of day. Days are assumed to match (a day field that
excludes the transition day can only make the true gaps longer), so the
bound is never too generous; tests check it against expanded runs.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from datetime import UTC, datetime, timedelta
from typing import NamedTuple
from zoneinfo import ZoneInfo

from wheel.model.jobs import DstFold, DstGap
from wheel.schedule.cron import CronExpr
from wheel.schedule.dst import DstRule
from wheel.schedule.zones import transition_between

DAY_S = 86_400
_STEP = timedelta(hours=12)
"""Offsets are sampled this far apart: no zone changes its offset twice within 12 hours."""


class Shape(NamedTuple):
    """A transition as the wall clock sees it."""

    forward: bool
    """Clocks jump forward (a gap) rather than back (a fold)."""
    wall_s: int
    """Seconds after local midnight: where the gap starts, or where the fold ends."""
    shift_s: int
    """How far the clocks move."""


@functools.lru_cache(maxsize=1024)
def shapes(tz: ZoneInfo, year: int, years: int) -> tuple[Shape, ...]:
    """The distinct transition shapes of `tz` from the start of `year` for `years` years."""
    found: set[Shape] = set()
    instant = datetime(year, 1, 1, tzinfo=UTC)
    end = datetime(year + years, 1, 1, tzinfo=UTC)
    before = instant.astimezone(tz).utcoffset()
    while instant < end:
        later = instant + _STEP
        after = later.astimezone(tz).utcoffset()
        if after != before:
            assert before is not None
            assert after is not None
            at = transition_between(instant, later, tz)
            shift_s = int((after - before).total_seconds())
            # The wall time at the transition, read in the offset before it.
            wall = (at + before).replace(tzinfo=None)
            wall_s = wall.hour * 3600 + wall.minute * 60 + wall.second
            found.add(Shape(shift_s > 0, wall_s, abs(shift_s)))
        before = after
        instant = later
    return tuple(sorted(found))


def _times(expr: CronExpr) -> list[int]:
    """The expression's times of day in seconds, over three days (yesterday, today,
    tomorrow), so that neighbours across midnight are found by bisection."""
    day = sorted(
        h * 3600 + m * 60 + s for h in expr.hours for m in expr.minutes for s in expr.seconds
    )
    return [t + offset for offset in (-DAY_S, 0, DAY_S) for t in day]


def _shape_gaps(times: list[int], shape: Shape, rule: DstRule) -> list[int]:
    """The real gaps (seconds) between consecutive runs that `shape` shortens."""
    gaps: list[int] = []
    if shape.forward:
        start, end = shape.wall_s, shape.wall_s + shape.shift_s
        before = times[bisect.bisect_left(times, start) - 1]  # last run before the gap
        inside = times[bisect.bisect_left(times, start) : bisect.bisect_left(times, end)]
        after = times[bisect.bisect_left(times, end)]  # first run at or after its end
        if inside and rule.gap is DstGap.SHIFT:
            gaps.append(start - before)  # to the shifted run, at the gap's end
            if after > end:
                gaps.append(after - end)  # from the shifted run to the next
        else:
            gaps.append(after - before - shape.shift_s)
    elif rule.fold is DstFold.BOTH:
        start, end = shape.wall_s - shape.shift_s, shape.wall_s
        inside = times[bisect.bisect_left(times, start) : bisect.bisect_left(times, end)]
        if inside:
            gaps.append((end - inside[-1]) + (inside[0] - start))
    return [gap for gap in gaps if gap > 0]


def wall_spacing(expr: CronExpr) -> timedelta:
    """The shortest time between two consecutive times of day (the wall clock's view)."""
    times = _times(expr)
    return timedelta(seconds=min(b - a for a, b in itertools.pairwise(times)))


def real_spacing(expr: CronExpr, tz: ZoneInfo, rule: DstRule, year: int, years: int) -> timedelta:
    """A lower bound of the real time between consecutive runs, DST transitions of the
    given years included; exact when every day matches the expression."""
    times = _times(expr)
    shortest = min(b - a for a, b in itertools.pairwise(times))
    for shape in shapes(tz, year, years):
        shortest = min([shortest, *_shape_gaps(times, shape, rule)])
    return timedelta(seconds=shortest)
