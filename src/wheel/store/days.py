"""Batches of keys by UTC day: what lets one statement probe one day partition.

Statements that lock or update executions match keys with row comparisons and
prune day partitions by the batch's first and last instant (see "Keys, not
equalities" in schema.sql): a batch of one day probes that day's partition
only; one spanning k days would probe each of them per key. The hot paths
(claims, results) send one statement per day; the rest pass their span.
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
