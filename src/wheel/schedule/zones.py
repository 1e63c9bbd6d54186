"""IANA time zones, and what a wall time means in one: one instant, none, or two.

zoneinfo answers with PEP 495's fold: for a wall time, fold=0 uses the offset
before a transition and fold=1 the offset after. Where the two give the same
instant the wall time is ordinary; where they differ it either falls in a
gap (the clocks jumped over it: no instant shows it) or in a fold (the clocks
went back: two instants show it).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from wheel.errors import InvalidArgument, excerpt

_SECOND = timedelta(seconds=1)


@functools.cache
def zone(name: str, field: str = "schedule.time_zone") -> ZoneInfo:
    """The zone named `name`; InvalidArgument for an unknown one."""
    if not name:
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long for a path
        raise InvalidArgument(field, f"unknown time zone {excerpt(name)}") from None


@dataclass(frozen=True, slots=True)
class Ordinary:
    instant: datetime


@dataclass(frozen=True, slots=True)
class InGap:
    """The wall time was skipped; `after` is the first instant after the gap."""

    after: datetime
    gap_start: datetime
    """The wall time the gap begins at (naive)."""
    gap_end: datetime
    """The wall time the clocks jumped to (naive)."""


@dataclass(frozen=True, slots=True)
class InFold:
    """The wall time happened twice: `first` (before the clocks went back) and `last`."""

    first: datetime
    last: datetime


Resolution = Ordinary | InGap | InFold


def resolve(wall: datetime, tz: ZoneInfo) -> Resolution:
    """What naive wall time `wall` means in `tz`."""
    early = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    late = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if early == late:
        return Ordinary(early)
    first, last = min(early, late), max(early, late)
    if first.astimezone(tz).replace(tzinfo=None) == wall:
        return InFold(first, last)
    after = transition_between(first, last, tz)
    before = (after - _SECOND).astimezone(tz).replace(tzinfo=None) + _SECOND
    return InGap(after, before, after.astimezone(tz).replace(tzinfo=None))


@functools.lru_cache(maxsize=4096)
def transition_between(low: datetime, high: datetime, tz: ZoneInfo) -> datetime:
    """The instant in (low, high] at which `tz`'s UTC offset changes (to the second)."""
    before = low.astimezone(tz).utcoffset()
    while high - low > _SECOND:
        middle = low + (high - low) // 2
        middle = middle.replace(microsecond=0)
        if middle <= low:
            middle = low + _SECOND
        if middle.astimezone(tz).utcoffset() == before:
            low = middle
        else:
            high = middle
    return high


def describe_offset(instant: datetime, tz: ZoneInfo) -> str:
    """'02:00 BST' style: wall time and abbreviation in `tz`."""
    local = instant.astimezone(tz)
    return f"{local:%H:%M}" + (f":{local:%S}" if local.second else "") + f" {local.tzname()}"


_SAMPLE = timedelta(hours=12)
"""Offsets are sampled this far apart: no zone changes its offset twice within 12 hours."""


@dataclass(frozen=True, slots=True)
class Transition:
    """A change of a zone's UTC offset: the clocks going forward or back."""

    at: datetime
    """The instant (UTC) of the change."""
    before: datetime
    """The wall time the clocks showed just before it, read in the old offset (aware)."""
    after: datetime
    """The wall time they show from it on, in the new offset (aware)."""

    @property
    def forward(self) -> bool:
        return self.after.utcoffset() > self.before.utcoffset()  # type: ignore[operator]

    def describe(self) -> str:
        """'clocks go forward 01:00 GMT → 02:00 BST' ('back' when the offset shrinks)."""
        way = "forward" if self.forward else "back"
        return f"clocks go {way} {_wall(self.before)} → {_wall(self.after)}"


def _wall(local: datetime) -> str:
    return f"{local:%H:%M}" + (f":{local:%S}" if local.second else "") + f" {local.tzname()}"


def next_transition(tz: ZoneInfo, after: datetime, within: timedelta) -> Transition | None:
    """The first change of `tz`'s offset after instant `after` and within `within` of it;
    None when there is none (UTC, Asia/Tokyo). Found from zoneinfo's own rules."""
    low = after.astimezone(UTC)
    end = low + within
    offset = low.astimezone(tz).utcoffset()
    while low < end:
        high = min(low + _SAMPLE, end)
        if high.astimezone(tz).utcoffset() != offset:
            at = transition_between(low, high, tz)
            old = (at - _SECOND).astimezone(tz)
            assert old.utcoffset() is not None
            fixed = timezone(old.utcoffset(), old.tzname())  # type: ignore[arg-type]
            return Transition(at, at.astimezone(fixed), at.astimezone(tz))
        low = high
    return None
