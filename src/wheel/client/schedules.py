"""Schedules for users: `wheel.now()`, `wheel.at(instant)`, `wheel.cron(expression, zone)`,
`wheel.every(interval)`.

Each returns the model's `Schedule`, validated on construction, so a bad
value fails here, naming the field, before anything is sent:

    wheel.now()
    wheel.at(datetime(2027, 3, 28, 1, 30, tzinfo=UTC))
    wheel.cron("30 1 * * *", "Europe/London", smear=timedelta(minutes=5))
    wheel.every(timedelta(minutes=90))

The expression and the zone are checked by the server (a preview shows what
they resolve to: `client.preview_schedule(schedule)`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import TypeVar

from wheel.errors import InvalidArgument
from wheel.model.jobs import DstFold, DstGap, IntervalDst, Schedule, ScheduleKind

E = TypeVar("E", bound=StrEnum)


def now() -> Schedule:
    """Run once, as soon as possible after creation."""
    return Schedule(ScheduleKind.NOW)


def at(instant: datetime) -> Schedule:
    """Run once at `instant`, which must carry a time zone (`tzinfo`)."""
    return Schedule(ScheduleKind.AT, at=instant)


def cron(
    expression: str,
    time_zone: str = "UTC",
    *,
    smear: timedelta | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    dst_gap: DstGap | str = DstGap.DEFAULT,
    dst_fold: DstFold | str = DstFold.DEFAULT,
) -> Schedule:
    """Run on a cron `expression` read in the IANA zone `time_zone`.

    Five fields, or six with a leading seconds field, aliases such as
    `@hourly`, and Jenkins' `H` (a stable value picked from the job id).
    `smear` adds a stable offset within that window to every run; `start` and
    `end` bound the occurrences; `dst_gap` ("shift" or "skip") and `dst_fold`
    ("first", "last" or "both") override Debian cron's rule for wall times a
    DST change skips or repeats.

        wheel.cron("0 9 * * MON-FRI", "America/New_York", dst_fold="first")
    """
    if not expression.strip():
        raise InvalidArgument("schedule.cron", "must not be empty")
    return Schedule(
        ScheduleKind.CRON,
        cron=expression,
        time_zone=time_zone,
        starts_at=start,
        ends_at=end,
        smear=smear or timedelta(0),
        dst_gap=_choice(DstGap, dst_gap, "schedule.dst_gap"),
        dst_fold=_choice(DstFold, dst_fold, "schedule.dst_fold"),
    )


def every(
    interval: timedelta,
    time_zone: str = "UTC",
    *,
    anchor: datetime | None = None,
    dst: IntervalDst | str = IntervalDst.ELAPSED,
    smear: timedelta | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    dst_gap: DstGap | str = DstGap.DEFAULT,
    dst_fold: DstFold | str = DstFold.DEFAULT,
) -> Schedule:
    """Run every `interval` (1 second to 366 days), at `anchor` + k * `interval`.

    Without an `anchor` the runs are aligned to the Unix epoch: every 15 minutes
    lands on :00, :15, :30 and :45 UTC. `dst` says how a change of `time_zone`'s
    offset counts: "elapsed" (the default: exactly `interval` of real time between
    runs) or "wall" (the same wall-clock spacing in the zone, so a daily run stays at
    09:00 local; `dst_gap` and `dst_fold` then decide wall times that do not exist or
    happen twice, as for cron). `smear`, `start` and `end` are as for `cron`.

        wheel.every(timedelta(days=1), "Europe/London", dst="wall",
                    anchor=datetime(2026, 1, 5, 9, tzinfo=ZoneInfo("Europe/London")))
    """
    return Schedule(
        ScheduleKind.INTERVAL,
        every=interval,
        anchor=anchor,
        interval_dst=_choice(IntervalDst, dst, "schedule.interval_dst"),
        time_zone=time_zone,
        starts_at=start,
        ends_at=end,
        smear=smear or timedelta(0),
        dst_gap=_choice(DstGap, dst_gap, "schedule.dst_gap"),
        dst_fold=_choice(DstFold, dst_fold, "schedule.dst_fold"),
    )


def _choice(cls: type[E], value: str, field: str) -> E:
    try:
        return cls(value)
    except ValueError:
        known = ", ".join(member.value for member in cls)
        raise InvalidArgument(field, f"{value!r} is not one of {known}") from None
