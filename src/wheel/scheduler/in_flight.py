"""Runs this node claimed and has not yet seen finish, with their count per tenant.

An entry remembers the run's routing, its fence and the link it went down,
so a result can be checked against its sender and a retry filed again. It
is forgotten when the run's attempt is recorded, or once its lease is long
gone (`expired`): then another node dealt with it, and the store's fence
refuses anything this node still says about it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from wheel.model.ids import ExecutionKey, TenantId
from wheel.scheduler.links import Link
from wheel.scheduler.ready import Ready

LEASE_GRACE_S = 5.0
"""An entry outlives its lease by this much before it is forgotten (a late record wins)."""


@dataclass(slots=True, eq=False)
class InFlight:
    """An occurrence this node claimed and has not yet seen finish."""

    ready: Ready
    fence: int
    link: Link | None
    expires_monotonic_s: float
    """Forget it after this (its lease ran out and someone else dealt with it)."""


class InFlightRuns:
    def __init__(self) -> None:
        self._runs: dict[ExecutionKey, InFlight] = {}
        self.by_tenant: Counter[TenantId] = Counter()
        self.by_link: Counter[int] = Counter()
        """By link serial: what each executor stream holds of this node's runs."""

    def add(self, key: ExecutionKey, entry: InFlight) -> None:
        self._runs[key] = entry
        self.by_tenant[entry.ready.tenant] += 1
        if entry.link is not None:
            self.by_link[entry.link.serial] += 1

    def get(self, key: ExecutionKey) -> InFlight | None:
        return self._runs.get(key)

    def done(self, key: ExecutionKey) -> InFlight | None:
        """Forget a run; the entry, or None if it was not in flight here."""
        entry = self._runs.pop(key, None)
        if entry is not None:
            tenant = entry.ready.tenant
            self.by_tenant[tenant] -= 1
            if self.by_tenant[tenant] <= 0:
                del self.by_tenant[tenant]
            if entry.link is not None:
                serial = entry.link.serial
                self.by_link[serial] -= 1
                if self.by_link[serial] <= 0:
                    del self.by_link[serial]
        return entry

    def expired(self, now_monotonic_s: float) -> list[ExecutionKey]:
        return [k for k, e in self._runs.items() if e.expires_monotonic_s < now_monotonic_s]

    def on(self, link: Link) -> list[tuple[ExecutionKey, InFlight]]:
        """The runs handed to one link (a walk over every run in flight: for rare events)."""
        return [(key, entry) for key, entry in self._runs.items() if entry.link is link]

    def __contains__(self, key: object) -> bool:
        return key in self._runs

    def __len__(self) -> int:
        return len(self._runs)

    def __iter__(self) -> Iterator[ExecutionKey]:
        return iter(self._runs)
