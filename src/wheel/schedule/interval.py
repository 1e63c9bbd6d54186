"""Interval schedules: a run every `every`, phased by an anchor, in real or wall-clock time.

    plan = IntervalPlan.of(schedule, tz)      # an INTERVAL Schedule, validated by the model
    plan.runs(start, end)                     # Occurrences with instants in [start, end)
    describe_interval(schedule)               # "Every 90 minutes of real time"

Runs are the grid `anchor + k * every` for every integer k (the anchor may be
long past, or in the future). Without an anchor the grid is the Unix epoch's,
as Temporal's: every 15 minutes lands on :00, :15, :30 and :45; every 90
minutes on 00:00, 01:30, ... UTC of the epoch's grid.

Two ways to count across a change of the zone's offset (`IntervalDst`):

- `elapsed` (the default): the grid is of instants. Every run is exactly
  `every` of real time after the previous one; the zone only names wall times.
  A 24-hour job at 09:00 GMT runs at 10:00 BST after the spring change.
- `wall`: the grid is of wall times in the job's zone, from the anchor's wall
  time (default 1970-01-01 00:00 local). A 24-hour job stays at 09:00 local.
  A wall time that does not exist, or that happens twice, is resolved as a
  cron wall time is (`wheel.schedule.dst.place`), under Debian cron's rule for
  its kind: an interval shorter than a day is interval-like (as `*/15` is:
  gap `skip`, fold `both`), a day or longer is fixed-time (as `0 9 * * *`:
  gap `shift`, fold `first`). The job's DstGap/DstFold override either half.

All arithmetic is on integer microseconds, so a run is exactly on the grid
however far it is from the anchor.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from wheel.model.jobs import IntervalDst, Schedule
from wheel.schedule.dst import DstRule, Occurrence, place
from wheel.schedule.zones import (
    Ordinary,
    Transition,
    describe_offset,
    next_transition,
    resolve,
    zone,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_WALL = datetime(1970, 1, 1)
_US = timedelta(microseconds=1)
# A transition moves wall clocks by at most a few hours: wall times this far outside
# a window's (offset-shifted) bounds cannot land inside it.
_SLACK = timedelta(hours=3)
# Windows up to this long may take the no-transition shortcut (see `_wall_runs`).
_FAST_WINDOW = timedelta(days=1)


def _us(delta: timedelta) -> int:
    return delta // _US


def _offset(instant: datetime, tz: ZoneInfo) -> timedelta:
    offset = instant.astimezone(tz).utcoffset()
    assert offset is not None
    return offset


@dataclass(frozen=True, slots=True)
class IntervalPlan:
    """An interval schedule's grid, ready to answer which runs fall in a window."""

    every: timedelta
    tz: ZoneInfo
    wall: bool
    """True: the grid is of wall times in `tz` (IntervalDst.WALL)."""
    origin: datetime
    """The grid's k = 0: an aware UTC instant (elapsed), or a naive wall time (wall)."""
    rule: DstRule
    """How a wall-grid time in a gap or a fold resolves (unused for elapsed)."""

    @classmethod
    def of(cls, schedule: Schedule, tz: ZoneInfo) -> IntervalPlan:
        assert schedule.every is not None
        wall = schedule.interval_dst is IntervalDst.WALL
        if wall:
            origin = (
                schedule.anchor.astimezone(tz).replace(tzinfo=None)
                if schedule.anchor is not None
                else _EPOCH_WALL
            )
        else:
            origin = (schedule.anchor or EPOCH).astimezone(UTC)
        # A sub-day wall grid is interval-like (as `*/15 * * * *`), a day or more fixed-time.
        rule = DstRule.for_expression(
            schedule.every < timedelta(days=1), schedule.dst_gap, schedule.dst_fold
        )
        return cls(schedule.every, tz, wall, origin, rule)

    def runs(
        self, start: datetime, end: datetime, *, limit: int | None = None, from_end: bool = False
    ) -> list[Occurrence]:
        """Runs with instants in [start, end), sorted, one per instant (dropped runs included).

        With a `limit`: at least the first (with `from_end`, the last) `limit` runs
        that happen, and not many more, so a preview never expands a whole window.
        """
        if start >= end:
            return []
        if self.wall:
            return self._wall_runs(start, end, limit, from_end)
        return self._elapsed_runs(start, end, limit, from_end)

    # -- elapsed: a grid of instants --------------------------------------------------------

    def _elapsed_runs(
        self, start: datetime, end: datetime, limit: int | None, from_end: bool
    ) -> list[Occurrence]:
        every_us = _us(self.every)
        first = -(-_us(start - self.origin) // every_us)  # ceil: the first k at or after start
        last = -(-_us(end - self.origin) // every_us) - 1  # the last k before end
        if limit is not None and last - first + 1 > limit:
            first, last = (last - limit + 1, last) if from_end else (first, first + limit - 1)
        result: list[Occurrence] = []
        previous = (self.origin + (first - 1) * self.every).astimezone(self.tz).utcoffset()
        for k in range(first, last + 1):
            instant = self.origin + k * self.every
            local = instant.astimezone(self.tz)
            offset = local.utcoffset()
            note = None
            if offset != previous:
                before = describe_offset(instant - self.every, self.tz)
                note = (
                    f"the clocks changed since the previous run ({before}): still "
                    f"{spoken(self.every)} of real time after it"
                )
            previous = offset
            result.append(Occurrence(instant, local.replace(tzinfo=None), note))
        return result

    # -- wall: a grid of wall times, resolved in the zone -----------------------------------

    def _k(self, wall: datetime) -> int:
        """The last k whose wall time is at or before `wall`."""
        return _us(wall - self.origin) // _us(self.every)

    def _wall_runs(
        self, start: datetime, end: datetime, limit: int | None, from_end: bool
    ) -> list[Occurrence]:
        if self.every <= _SLACK and end - start <= _FAST_WINDOW:
            # A frequent grid over a short window (the materialiser's): with no change of
            # offset near, every wall time is ordinary, one subtraction away, and so is
            # the previous grid time (no note to make).
            offset = _offset(start - _SLACK, self.tz)
            middle = start + (end - start) / 2
            if _offset(middle, self.tz) == offset == _offset(end + _SLACK, self.tz):
                return self._ordinary(start, end, offset, limit, from_end)
        offsets = [_offset(start, self.tz), _offset(end, self.tz)]
        low, high = min(offsets), max(offsets)
        first = self._k((start + low - _SLACK).replace(tzinfo=None))
        last = self._k((end + high + _SLACK).replace(tzinfo=None)) + 1
        # With a limit, walk k from the window's near end; stop once enough runs are found
        # and a transition's worth of wall time (`_SLACK`) more has been looked at, so a
        # run that a fold or gap put before a later-k run is not missed.
        ks = range(last, first - 1, -1) if from_end else range(first, last + 1)
        stop_after = None
        found: dict[datetime, Occurrence] = {}
        real = 0
        slack_k = _us(_SLACK) // _us(self.every) + 1
        for k in ks:
            if stop_after is not None and (k < stop_after if from_end else k > stop_after):
                break
            wall = self.origin + k * self.every
            for placed in place(wall, self.tz, self.rule):
                if not start <= placed.instant < end:
                    continue
                occurrence = placed if placed.note else self._noted(placed)
                kept = found.get(occurrence.instant)
                if kept is None or (kept.skipped and not occurrence.skipped):
                    if kept is None and not occurrence.skipped:
                        real += 1
                    found[occurrence.instant] = occurrence
            if limit is not None and stop_after is None and real >= limit:
                stop_after = k - slack_k if from_end else k + slack_k
        return [found[instant] for instant in sorted(found)]

    def _ordinary(
        self, start: datetime, end: datetime, offset: timedelta, limit: int | None, from_end: bool
    ) -> list[Occurrence]:
        every_us = _us(self.every)
        low, high = (start + offset).replace(tzinfo=None), (end + offset).replace(tzinfo=None)
        first = -(-_us(low - self.origin) // every_us)
        last = -(-_us(high - self.origin) // every_us) - 1
        if limit is not None and last - first + 1 > limit:
            first, last = (last - limit + 1, last) if from_end else (first, first + limit - 1)
        result = []
        for k in range(first, last + 1):
            wall = self.origin + k * self.every
            result.append(Occurrence((wall - offset).replace(tzinfo=UTC), wall))
        return result

    def _noted(self, occurrence: Occurrence) -> Occurrence:
        """An ordinary wall-grid run, with a note when the previous grid time was ordinary
        too but a change of offset between them made the real time differ from `every`."""
        previous = resolve(occurrence.wall - self.every, self.tz)
        if not isinstance(previous, Ordinary):
            return occurrence  # that wall time's own note says what DST did
        real = occurrence.instant - previous.instant
        if real == self.every:
            return occurrence
        note = (
            "the clocks changed since the previous run: the same wall-clock spacing, "
            f"{spoken(real)} of real time after it"
        )
        return Occurrence(occurrence.instant, occurrence.wall, note)

    # -- what bounds a smear ----------------------------------------------------------------

    def real_spacing(self, after: datetime, years: int) -> timedelta:
        """The shortest real time between two consecutive runs from `after` on, DST
        transitions of the zone in the next `years` included (exact, not a bound).

        Elapsed runs are always `every` apart. On a wall grid only the runs around a
        transition can come closer, so only those are placed: the grid times next to
        the edges of each gap or fold, with a neighbour on each side.
        """
        shortest = self.every
        if not self.wall:
            return shortest
        horizon = after + timedelta(days=366 * years)
        for change in _transitions(self.tz, after.year, years + 1):
            if not after <= change.at < horizon:
                continue
            edges = (change.before.replace(tzinfo=None), change.after.replace(tzinfo=None))
            walls = {
                self.origin + (self._k(edge) + step) * self.every
                for edge in edges
                for step in (-1, 0, 1, 2)
            }
            instants = sorted(
                {o.instant for w in walls for o in place(w, self.tz, self.rule) if not o.skipped}
            )
            for a, b in itertools.pairwise(instants):
                shortest = min(shortest, b - a)
        return shortest


@functools.lru_cache(maxsize=256)
def _transitions(tz: ZoneInfo, year: int, years: int) -> tuple[Transition, ...]:
    """`tz`'s changes of offset from the start of `year` for `years` years: found once per
    zone, not once per job of a batch."""
    found = []
    moment = datetime(year, 1, 1, tzinfo=UTC)
    end = datetime(year + years, 1, 1, tzinfo=UTC)
    while (change := next_transition(tz, moment, end - moment)) is not None:
        found.append(change)
        moment = change.at
    return tuple(found)


def spoken(every: timedelta) -> str:
    """`every` in the largest unit that divides it: "90 minutes", "36 hours", "1 day"."""
    total_ms = every // timedelta(milliseconds=1)
    for unit, size_ms in (
        ("day", 86_400_000),
        ("hour", 3_600_000),
        ("minute", 60_000),
        ("second", 1000),
        ("millisecond", 1),
    ):
        if total_ms % size_ms == 0:
            count = total_ms // size_ms
            return f"{count} {unit}" + ("" if count == 1 else "s")
    raise AssertionError("unreachable: every unit divides a whole number of milliseconds")


def describe_interval(schedule: Schedule) -> str:
    """An interval schedule in words: "Every 90 minutes of real time", "Every 1 day by the
    wall clock in Europe/London, from 09:00"."""
    assert schedule.every is not None
    every = spoken(schedule.every)
    if schedule.interval_dst is IntervalDst.WALL:
        text = f"Every {every} by the wall clock in {schedule.time_zone}"
        if schedule.anchor is not None:
            anchor = schedule.anchor.astimezone(zone(schedule.time_zone))
            text += f", from {anchor:%Y-%m-%d %H:%M}" + (f":{anchor:%S}" if anchor.second else "")
        return text
    text = f"Every {every} of real time"
    if schedule.anchor is not None:
        anchor = schedule.anchor.astimezone(UTC)
        text += f", from {anchor:%Y-%m-%d %H:%M}" + (f":{anchor:%S}" if anchor.second else "")
        text += " UTC"
    return text
