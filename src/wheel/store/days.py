"""Batches of keys by UTC day: one statement, one day partition, no run-time pruning.

Statements that lock or update executions by key are planned with the
batch's first and last instant (see "One day per statement" in schema.sql):
a one-day batch is planned as that day's partition alone, with nothing left
to prune while it runs (which Postgres 18 gets wrong when a row is rechecked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from typing import TypeVar

from wheel.store.time_partitions import day_of

T = TypeVar("T")


def by_day(items: Iterable[T], instant: Callable[[T], datetime]) -> list[list[T]]:
    """`items` grouped by the UTC day of `instant(item)`, each group in input order,
    the groups in the order their first item came."""
    groups: dict[date, list[T]] = {}
    for item in items:
        groups.setdefault(day_of(instant(item)), []).append(item)
    return list(groups.values())


def span(instants: Sequence[datetime]) -> dict[str, datetime]:
    """The `first` and `last` parameters of a statement over these instants (not empty)."""
    return {"first": min(instants), "last": max(instants)}
