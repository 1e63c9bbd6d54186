"""Previews: the next runs as a person reads them, with what DST and smear did."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from wheel.schedule.business_days import BusinessDays
from wheel.schedule.dst import Occurrence
from wheel.schedule.plan import SchedulePlan

_INSTANT = timedelta(microseconds=1)
_MOST_SKIPPED = 31
"""A preview under calendars shows at most this many lines beyond the runs asked for."""


@dataclass(frozen=True, slots=True)
class PreviewRun:
    fire_at: datetime
    """The instant it fires (UTC): the scheduled instant plus the job's smear."""
    scheduled_for: datetime
    """The occurrence's instant (UTC), its identity."""
    wall_time: str
    """When it fires in the job's zone, ISO 8601 with the UTC offset."""
    time_zone: str
    note: str | None
    skipped: bool = False
    """A business calendar closes its day and it does not run (`fire_at`: when it would)."""
    moved_from: datetime | None = None
    """A business calendar moved it: the instant it was scheduled for (`scheduled_for`)."""
    calendar: str | None = None
    """The calendar that skipped or moved it."""
    calendar_reason: str | None = None
    """What that calendar says of the day ("Christmas Day")."""


def _duration(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:06.3f}s" if minutes else f"{rest:.3f}s"


def preview(
    plan: SchedulePlan, after: datetime, count: int, days: BusinessDays | None = None
) -> list[PreviewRun]:
    """The next `count` runs at or after `after`; notes say where DST or smear moved them.

    With business calendars (`days`), the runs their closed days skip are shown too
    (`skipped`), beside the `count` that run, and moved runs say where they moved.
    """
    if days is None or not days.calendars:
        return _rendered(plan, plan.next_runs(after, count, skipped=True))
    return _rendered(plan, _next_under(days, after, count), days)


def _next_under(days: BusinessDays, after: datetime, count: int) -> list[Occurrence]:
    """The scheduled runs from `after` on until `count` of them run under the calendars;
    at most `count` + 31 lines (a calendar closing every day does not stall a preview)."""
    found: list[Occurrence] = []
    start, running = after, 0
    while running < count and len(found) < count + _MOST_SKIPPED:
        batch = days.plan.next_runs(start, count - running, skipped=True)
        if not batch:
            break
        for occurrence in batch:
            found.append(occurrence)
            running += not occurrence.skipped and not days.place(occurrence).skipped
        start = batch[-1].instant + _INSTANT
    return found[: count + _MOST_SKIPPED]


@dataclass(frozen=True, slots=True)
class AroundRuns:
    """The runs on both sides of an instant (a DST change): what it does to the schedule."""

    earlier: list[PreviewRun]
    """The last runs scheduled before the instant, oldest first."""
    later: list[PreviewRun]
    """The first runs scheduled at or after it."""


def preview_around(
    plan: SchedulePlan, at: datetime, before: int, after: int, days: BusinessDays | None = None
) -> AroundRuns:
    """The last `before` runs scheduled before `at` and the first `after` from it on.

    Both walk the schedule outwards from `at`, so a minutely or every-second schedule
    shows the minutes or seconds around a DST change, and a daily one the days.
    """
    earlier = plan.previous_runs(at, before, skipped=True) if before else []
    runs = _rendered(plan, [*earlier, *plan.next_runs(at, after, skipped=True)], days)
    return AroundRuns(
        earlier=[run for run in runs if run.scheduled_for < at],
        later=[run for run in runs if run.scheduled_for >= at],
    )


def _rendered(
    plan: SchedulePlan, occurrences: list[Occurrence], days: BusinessDays | None = None
) -> list[PreviewRun]:
    """Previews of `occurrences`: a dropped one's note goes to the next run that happens;
    a calendar's skip or move is said first."""
    result, pending_notes = [], []
    for occurrence in occurrences:
        if occurrence.skipped:
            pending_notes.append(occurrence.note or "")
            continue
        placed = days.place(occurrence) if days is not None else None
        instant = placed.instant if placed is not None else occurrence.instant
        fire_at = plan.fire_at(instant)
        said = placed.preview_note(plan.tz) if placed is not None else None
        notes = [*([said] if said else []), *pending_notes]
        notes.extend([occurrence.note] if occurrence.note else [])
        if plan.offset:
            notes.append(f"smeared by +{_duration(plan.offset)} (stable for this job)")
        pending_notes = []
        local = fire_at.astimezone(plan.tz)
        result.append(
            PreviewRun(
                fire_at=fire_at,
                scheduled_for=occurrence.instant,
                wall_time=local.isoformat(),
                time_zone=plan.tz.key,
                note="; ".join(notes) or None,
                skipped=placed is not None and placed.skipped,
                moved_from=occurrence.instant if placed is not None and placed.moved else None,
                calendar=placed.calendar if placed is not None else None,
                calendar_reason=placed.holiday if placed is not None else None,
            )
        )
    return result
