"""Previews: the next runs as a person reads them, with what DST and smear did."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from wheel.schedule.dst import Occurrence
from wheel.schedule.plan import SchedulePlan


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


def _duration(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:06.3f}s" if minutes else f"{rest:.3f}s"


def preview(plan: SchedulePlan, after: datetime, count: int) -> list[PreviewRun]:
    """The next `count` runs at or after `after`; notes say where DST or smear moved them."""
    return _rendered(plan, plan.next_runs(after, count, skipped=True))


@dataclass(frozen=True, slots=True)
class AroundRuns:
    """The runs on both sides of an instant (a DST change): what it does to the schedule."""

    earlier: list[PreviewRun]
    """The last runs scheduled before the instant, oldest first."""
    later: list[PreviewRun]
    """The first runs scheduled at or after it."""


def preview_around(plan: SchedulePlan, at: datetime, before: int, after: int) -> AroundRuns:
    """The last `before` runs scheduled before `at` and the first `after` from it on.

    Both walk the schedule outwards from `at`, so a minutely or every-second schedule
    shows the minutes or seconds around a DST change, and a daily one the days.
    """
    earlier = plan.previous_runs(at, before, skipped=True) if before else []
    runs = _rendered(plan, [*earlier, *plan.next_runs(at, after, skipped=True)])
    return AroundRuns(
        earlier=[run for run in runs if run.scheduled_for < at],
        later=[run for run in runs if run.scheduled_for >= at],
    )


def _rendered(plan: SchedulePlan, occurrences: list[Occurrence]) -> list[PreviewRun]:
    """Previews of `occurrences`: a dropped one's note goes to the next run that happens."""
    result, pending_notes = [], []
    for occurrence in occurrences:
        if occurrence.skipped:
            pending_notes.append(occurrence.note or "")
            continue
        fire_at = plan.fire_at(occurrence.instant)
        notes = [*pending_notes, *([occurrence.note] if occurrence.note else [])]
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
            )
        )
    return result
