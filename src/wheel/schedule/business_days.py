"""Business calendars on a job: the runs a closed day skips or moves, in the job's zone.

    days = BusinessDays(plan, calendars, CalendarPolicy.NEXT_BUSINESS_DAY)
    days.runs(start, end)    # every run scheduled in [start, end), each with its fate
    days.moved_in(end)       # previous_business_day: later runs that move before `end`

A day is closed when any of the job's calendars closes it (the first in the
job's order names it). A run's day is the date of its instant in the job's
zone. Under `skip` a run on a closed day is skipped; under `next_business_day`
(`previous_business_day`) it moves to the same wall time on the nearest open
day after (before) it, looking at most MAX_MOVE_DAYS days, and that wall time
is placed by the job's DST rule (one the clocks skip there follows the gap
policy: shifted to the end of the gap, or no run). A moved run keeps its
identity, the instant it was scheduled for; only the instant it fires moves.

One open day never runs a job twice at one instant: a run that would land
where the job already runs (a run scheduled there, or one that moved less to
get there) is skipped instead. Every skip keeps its reason, naming the calendar.

Calendars are anything with a `name` and `closed(day) -> reason | None`
(wheel.schedule.calendars.Calendar); what they answer is cached per day here,
so a day costs one lookup however many runs it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from wheel.model.jobs import CalendarPolicy, DstFold, DstGap
from wheel.schedule.dst import DstRule, Occurrence, place
from wheel.schedule.plan import SchedulePlan

MAX_MOVE_DAYS = 31
"""The furthest a run moves looking for an open day; past it the run is skipped."""

_INSTANT = timedelta(microseconds=1)
_DAY = timedelta(days=1)
_CACHED_DAYS = 4096


class ClosesDays(Protocol):
    """A business calendar as a job's runs see it."""

    @property
    def name(self) -> str: ...

    def closed(self, day: date) -> str | None:
        """Why `day` is closed ("Christmas Day"), or None when it is open."""
        ...


def long_date(day: date) -> str:
    """25 Dec 2026."""
    return f"{day.day} {day:%b %Y}"


def short_date(day: date) -> str:
    """Mon 28 Dec."""
    return f"{day:%a} {day.day} {day:%b}"


def _clock(wall: datetime) -> str:
    return f"{wall:%H:%M}" + (f":{wall:%S}" if wall.second else "")


@dataclass(frozen=True, slots=True)
class Placed:
    """A scheduled run and what the job's calendars make of it."""

    occurrence: Occurrence
    """The run as the schedule makes it: its instant is the run's identity."""
    instant: datetime
    """When it runs (UTC): the scheduled instant, or where it moved."""
    skipped: bool = False
    calendar: str | None = None
    """The calendar that closes the run's day (None: the day is open)."""
    holiday: str | None = None
    """What that calendar says of the day ("Christmas Day")."""
    detail: str | None = None
    """Why a run that should have moved was skipped ("moved to Mon 28 Dec 09:00, where a
    run already falls")."""

    @property
    def moved(self) -> bool:
        return not self.skipped and self.instant != self.occurrence.instant

    def reason(self, tz: ZoneInfo) -> str | None:
        """A skipped run's recorded reason: "calendar uk-holidays: 25 Dec 2026 is Christmas Day"."""
        if not self.skipped:
            return None
        day = self.occurrence.instant.astimezone(tz).date()
        because = f"calendar {self.calendar}: {long_date(day)} is {self.holiday}"
        return f"{because}; {self.detail}" if self.detail else because

    def moved_from(self, tz: ZoneInfo) -> str | None:
        """A moved run's step: "moved from Sat 26 Dec 09:00 by calendar uk-holidays: Boxing Day"."""
        if not self.moved:
            return None
        wall = self.occurrence.instant.astimezone(tz)
        return (
            f"moved from {short_date(wall.date())} {_clock(wall)} "
            f"by calendar {self.calendar}: {self.holiday}"
        )

    def preview_note(self, tz: ZoneInfo) -> str | None:
        """What a preview says of it: skipped or moved, and which calendar, or None."""
        if self.calendar is None:
            return None
        day = self.occurrence.instant.astimezone(tz).date()
        if self.skipped:
            said = f"skipped: {long_date(day)} is {self.holiday} (calendar {self.calendar})"
            return f"{said}; {self.detail}" if self.detail else said
        to = self.instant.astimezone(tz).date()
        return (
            f"moved to {short_date(to)} "
            f"({day.day} {day:%b} is {self.holiday}, calendar {self.calendar})"
        )


class BusinessDays:
    """A job's schedule under its calendars and calendar policy. Not thread-safe (its
    cache of closed days)."""

    def __init__(
        self, plan: SchedulePlan, calendars: Sequence[ClosesDays], policy: CalendarPolicy
    ) -> None:
        self.plan = plan
        self.calendars = tuple(calendars)
        self.policy = policy
        self._rule = plan.rule or DstRule(DstGap.SHIFT, DstFold.FIRST)
        self._closed: dict[date, tuple[str, str] | None] = {}

    def closed(self, day: date) -> tuple[str, str] | None:
        """(calendar, reason) of the first calendar that closes `day`; None: it is open."""
        if day in self._closed:
            return self._closed[day]
        found = None
        for calendar in self.calendars:
            why = calendar.closed(day)
            if why is not None:
                found = (calendar.name, why)
                break
        if len(self._closed) >= _CACHED_DAYS:
            self._closed.clear()
        self._closed[day] = found
        return found

    def runs(self, start: datetime, end: datetime) -> list[Placed]:
        """The runs scheduled in [start, end) (by scheduled instant), each placed."""
        return [self.place(o) for o in self.plan.runs(start, end)]

    def moved_in(self, end: datetime) -> list[Placed]:
        """Runs scheduled at or after `end` that move before it (previous_business_day):
        the closed days right after `end`'s day, at most MAX_MOVE_DAYS of them."""
        if self.policy is not CalendarPolicy.PREVIOUS_BUSINESS_DAY or not self.calendars:
            return []
        day = end.astimezone(self.plan.tz).date()
        first = day if self.closed(day) is not None else day + _DAY
        if self.closed(first) is None:
            return []
        last = first
        while (last - day).days < MAX_MOVE_DAYS and self.closed(last + _DAY) is not None:
            last += _DAY
        high = end + timedelta(days=(last - day).days + 2)
        return [p for p in self.runs(end, high) if p.moved and p.instant < end]

    def place(self, occurrence: Occurrence) -> Placed:
        """What the calendars make of one scheduled run."""
        tz = self.plan.tz
        # The date of the wall time that made it: its date in the zone (a wall time in a
        # gap is shifted within its day), without a zone lookup per run.
        day = occurrence.wall.date()
        closing = self.closed(day) if self.calendars else None
        if closing is None:
            return Placed(occurrence, occurrence.instant)
        name, why = closing
        if self.policy is CalendarPolicy.SKIP:
            return Placed(occurrence, occurrence.instant, True, name, why)
        step = _DAY if self.policy is CalendarPolicy.NEXT_BUSINESS_DAY else -_DAY
        target = day
        for _ in range(MAX_MOVE_DAYS):
            target += step
            if self.closed(target) is None:
                break
        else:
            side = "after" if step > timedelta(0) else "before"
            detail = f"no open day within {MAX_MOVE_DAYS} days {side} it"
            return Placed(occurrence, occurrence.instant, True, name, why, detail)
        wall = datetime.combine(target, occurrence.wall.time())
        landed = place(wall, tz, self._rule)[0]
        if landed.skipped:  # the gap policy drops that wall time on that day
            detail = f"moved to {short_date(target)}, but {landed.note}"
            return Placed(occurrence, occurrence.instant, True, name, why, detail)
        if self._taken(occurrence, day, target, landed.instant, step):
            local = landed.instant.astimezone(tz)
            detail = f"moved to {short_date(target)} {_clock(local)}, where a run already falls"
            return Placed(occurrence, occurrence.instant, True, name, why, detail)
        return Placed(occurrence, landed.instant, False, name, why)

    def _scheduled_at(self, instant: datetime) -> list[Occurrence]:
        return self.plan.runs(instant, instant + _INSTANT)

    def _taken(
        self, occurrence: Occurrence, day: date, target: date, instant: datetime, step: timedelta
    ) -> bool:
        """Whether the job already runs at `instant`: a run scheduled there (its day is
        open: it stays), or a run at the same wall time nearer to it (it moves there too,
        and moved less: it wins)."""
        if self._scheduled_at(instant):
            return True
        later = step > timedelta(0)
        between = day
        while between != target:
            wall = datetime.combine(between, occurrence.wall.time())
            for other in place(wall, self.plan.tz, self._rule):
                if other.skipped:
                    continue
                nearer = (
                    other.instant > occurrence.instant
                    if later
                    else other.instant < occurrence.instant
                )
                if nearer and any(r.wall == wall for r in self._scheduled_at(other.instant)):
                    return True
            between += step
        return False
