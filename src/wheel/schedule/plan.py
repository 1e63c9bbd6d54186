"""A job's schedule, validated and ready to answer "when does it run?".

    plan = compile_schedule(schedule, job_id, now=created_at)
    plan.runs(start, end)          # Occurrences in [start, end), bounds applied
    plan.fire_at(run.instant)      # the instant it fires: plus the job's smear offset
    plan.next_runs(after, 5)       # for previews
    plan.previous_runs(before, 5)  # the runs just before an instant (a DST change)

Bounds (`starts_at`, `ends_at`) are inclusive. The smear offset is a stable
value in [0, smear) chosen by hashing the job id, the same every period; a
smear as long as the shortest real time between two runs (DST transitions of
the zone in the next `HORIZON_YEARS` included: `wheel.schedule.spacing`) is
refused, so smearing never moves a run past the next one.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from wheel.errors import InvalidArgument
from wheel.model.jobs import Schedule, ScheduleKind
from wheel.schedule import cron
from wheel.schedule.dst import DstRule, Occurrence
from wheel.schedule.expand import HORIZON_YEARS, expand, runs_some_day
from wheel.schedule.interval import IntervalPlan
from wheel.schedule.spacing import real_spacing, wall_spacing
from wheel.schedule.zones import zone

_FIRST_WINDOW = timedelta(minutes=1)
_LARGEST_WINDOW = timedelta(days=32)


def smear_offset(job_id: uuid.UUID, smear: timedelta) -> timedelta:
    """The job's stable offset within [0, smear), to the millisecond."""
    window_ms = int(smear / timedelta(milliseconds=1))
    if window_ms <= 0:
        return timedelta(0)
    digest = hashlib.blake2b(job_id.bytes + b"smear", digest_size=8).digest()
    return timedelta(milliseconds=int.from_bytes(digest, "big") % window_ms)


@dataclass(frozen=True, slots=True)
class SchedulePlan:
    schedule: Schedule
    job_id: uuid.UUID
    tz: ZoneInfo
    expr: cron.CronExpr | None
    rule: DstRule | None
    one_off: datetime | None
    """The instant of a NOW or AT schedule."""
    offset: timedelta
    interval: IntervalPlan | None = None
    """The grid of an INTERVAL schedule (`expr` and `rule` are then None)."""

    def fire_at(self, instant: datetime) -> datetime:
        return instant + self.offset

    def runs(
        self,
        start: datetime,
        end: datetime,
        *,
        skipped: bool = False,
        limit: int | None = None,
        from_end: bool = False,
    ) -> list[Occurrence]:
        """Runs with instants in [start, end) and within the bounds, in order.

        `limit` and `from_end`: at least the first (last) `limit` runs, and not
        much more than the day they end in (see `expand`).
        """
        low = max(start, self.schedule.starts_at or start)
        high = end
        if self.schedule.ends_at is not None:
            high = min(end, self.schedule.ends_at + timedelta(microseconds=1))
        if low >= high:
            return []
        if self.one_off is not None:
            return [Occurrence(self.one_off, self.one_off)] if low <= self.one_off < high else []
        if self.interval is not None:
            found = self.interval.runs(low, high, limit=limit, from_end=from_end)
            return found if skipped else [o for o in found if not o.skipped]
        assert self.expr is not None
        assert self.rule is not None
        found = expand(self.expr, self.tz, self.rule, low, high, limit=limit, from_end=from_end)
        return found if skipped else [o for o in found if not o.skipped]

    def next_runs(self, after: datetime, count: int, *, skipped: bool = False) -> list[Occurrence]:
        """The first `count` runs at or after `after` (fewer if the schedule ends).

        Windows start at a minute and double only while too few runs are found,
        so an every-second schedule costs a minute's expansion, and a yearly one
        a few dozen cheap windows: a preview is never a tenant's way to stall a node.
        """
        found: list[Occurrence] = []
        start = max(after, self.schedule.starts_at or after)
        window = _FIRST_WINDOW
        limit = after + timedelta(days=366 * (HORIZON_YEARS + 1))
        while sum(not o.skipped for o in found) < count and start < limit:
            if self.schedule.ends_at is not None and start > self.schedule.ends_at:
                break
            wanted = count - sum(not o.skipped for o in found)
            found.extend(self.runs(start, start + window, skipped=skipped, limit=wanted))
            start += window
            if sum(not o.skipped for o in found) < count:
                window = min(window * 2, _LARGEST_WINDOW)
        result, real = [], 0
        for occurrence in found:
            if real == count:
                break
            result.append(occurrence)
            real += not occurrence.skipped
        return result

    def previous_runs(
        self, before: datetime, count: int, *, skipped: bool = False
    ) -> list[Occurrence]:
        """The last `count` runs before `before`, oldest first (fewer if the schedule starts).

        The same walk as `next_runs`, backwards: a minute's window first, doubling
        while too few runs are found, so the runs just before a DST change cost as
        little as the runs just after it, whatever the schedule's frequency.
        """
        found: list[Occurrence] = []
        end = before
        if self.schedule.ends_at is not None:
            end = min(end, self.schedule.ends_at + timedelta(microseconds=1))
        window = _FIRST_WINDOW
        limit = before - timedelta(days=366 * (HORIZON_YEARS + 1))
        while sum(not o.skipped for o in found) < count and end > limit:
            if self.schedule.starts_at is not None and end <= self.schedule.starts_at:
                break
            wanted = count - sum(not o.skipped for o in found)
            found[:0] = self.runs(end - window, end, skipped=skipped, limit=wanted, from_end=True)
            end -= window
            if sum(not o.skipped for o in found) < count:
                window = min(window * 2, _LARGEST_WINDOW)
        result: list[Occurrence] = []
        real = 0
        for occurrence in reversed(found):
            if real == count:
                break
            result.append(occurrence)
            real += not occurrence.skipped
        return result[::-1]


def compile_schedule(schedule: Schedule, job_id: uuid.UUID, *, now: datetime) -> SchedulePlan:
    """Validate `schedule` for `job_id`; InvalidArgument names the field and the reason.

    `now` is the creation instant: a NOW schedule runs then.
    """
    tz = zone(schedule.time_zone)
    offset = smear_offset(job_id, schedule.smear)
    if schedule.kind is ScheduleKind.NOW:
        return SchedulePlan(schedule, job_id, tz, None, None, now.astimezone(UTC), offset)
    if schedule.kind is ScheduleKind.AT:
        assert schedule.at is not None
        return SchedulePlan(schedule, job_id, tz, None, None, schedule.at.astimezone(UTC), offset)
    if schedule.kind is ScheduleKind.INTERVAL:
        return _interval_plan(schedule, job_id, tz, offset, now)
    assert schedule.cron is not None
    expr = cron.parse(schedule.cron, job_id)
    if not runs_some_day(expr, now.astimezone(tz).date()):
        raise InvalidArgument(
            "schedule.cron", f"{schedule.cron!r} matches no day in the next {HORIZON_YEARS} years"
        )
    rule = DstRule.for_expression(expr.wildcard, schedule.dst_gap, schedule.dst_fold)
    if schedule.smear > timedelta(0):
        spacing = real_spacing(expr, tz, rule, now.astimezone(tz).year, HORIZON_YEARS)
        if schedule.smear >= spacing:
            across = f" (in real time, across DST in {tz.key})"
            where = "" if spacing == wall_spacing(expr) else across
            raise InvalidArgument(
                "schedule.smear",
                f"{schedule.smear} is not shorter than the {spacing} between two runs{where}: "
                "it would move a run past the next one",
            )
    return SchedulePlan(schedule, job_id, tz, expr, rule, None, offset)


def _interval_plan(
    schedule: Schedule, job_id: uuid.UUID, tz: ZoneInfo, offset: timedelta, now: datetime
) -> SchedulePlan:
    """An INTERVAL schedule's plan; a smear must be shorter than the real time between runs."""
    interval = IntervalPlan.of(schedule, tz)
    if schedule.smear > timedelta(0):
        spacing = interval.real_spacing(now, HORIZON_YEARS)
        if schedule.smear >= spacing:
            assert schedule.every is not None
            where = "" if spacing == schedule.every else f" (in real time, across DST in {tz.key})"
            raise InvalidArgument(
                "schedule.smear",
                f"{schedule.smear} is not shorter than the {spacing} between two runs{where}: "
                "it would move a run past the next one",
            )
    return SchedulePlan(schedule, job_id, tz, None, None, None, offset, interval)
