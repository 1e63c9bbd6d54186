"""How a cron expression's wall times become instants across DST transitions.

Debian cron's rule by default, applied everywhere:

- a *wildcard* expression (`*` at the start of its minute or hour field) is
  interval-like: it runs at every real instant whose wall time matches — on
  both passes of a repeated hour, and not at all in a skipped one;
- a *fixed-time* expression runs once per wall time: on the first pass of a
  repeated hour, and the runs it would have had inside a skipped interval
  collapse into one run at the first instant after the gap.

A job may override either half: gap `shift` (one run at the end of the gap)
or `skip` (none); fold `first`, `last` or `both`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from wheel.model.jobs import DstFold, DstGap
from wheel.schedule.zones import InFold, InGap, Ordinary, describe_offset, resolve


@dataclass(frozen=True, slots=True)
class DstRule:
    gap: DstGap
    """SHIFT or SKIP."""
    fold: DstFold
    """FIRST, LAST or BOTH."""

    @classmethod
    def for_expression(cls, wildcard: bool, gap: DstGap, fold: DstFold) -> DstRule:
        """Debian cron's rule for this kind of expression, with the job's overrides."""
        default_gap = DstGap.SKIP if wildcard else DstGap.SHIFT
        default_fold = DstFold.BOTH if wildcard else DstFold.FIRST
        return cls(
            gap=default_gap if gap is DstGap.DEFAULT else gap,
            fold=default_fold if fold is DstFold.DEFAULT else fold,
        )


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One run: its instant (UTC), the wall time that made it, and a DST note if any."""

    instant: datetime
    wall: datetime
    note: str | None = None
    skipped: bool = False
    """True for a wall time the gap policy dropped: kept for previews to explain."""


def _day(wall: datetime) -> str:
    return f"{wall:%Y-%m-%d}"


def _clock(wall: datetime) -> str:
    return f"{wall:%H:%M}" + (f":{wall:%S}" if wall.second else "")


def place(wall: datetime, tz: ZoneInfo, rule: DstRule) -> list[Occurrence]:
    """The runs (and dropped runs) that wall time `wall` makes under `rule`."""
    where = resolve(wall, tz)
    if isinstance(where, Ordinary):
        return [Occurrence(where.instant, wall)]
    zone_name = tz.key
    if isinstance(where, InGap):
        gone = f"{_clock(wall)} does not exist on {_day(wall)} in {zone_name}"
        if rule.gap is DstGap.SKIP:
            return [Occurrence(where.after, wall, f"{gone}; no run", True)]
        return [
            Occurrence(where.after, wall, f"{gone}; runs at {describe_offset(where.after, tz)}")
        ]
    assert isinstance(where, InFold)
    twice = f"{_clock(wall)} happens twice on {_day(wall)} in {zone_name}"
    first = describe_offset(where.first, tz)
    last = describe_offset(where.last, tz)
    if rule.fold is DstFold.FIRST:
        return [Occurrence(where.first, wall, f"{twice}; runs once, at {first}")]
    if rule.fold is DstFold.LAST:
        return [Occurrence(where.last, wall, f"{twice}; runs once, at {last}")]
    return [
        Occurrence(where.first, wall, f"{twice}; runs at {first} and again at {last}"),
        Occurrence(where.last, wall, f"{twice}; second run, at {last}"),
    ]
