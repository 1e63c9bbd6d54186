"""Keeping the wheel filled: the rolling window, due notifications, and the catch-up scan.

- The window: every `load_interval_s` the node loads the pending
  occurrences of its partitions due between where it loaded up to last time
  and now + window — only the new slice, never the whole window again.
- A newly acquired partition is loaded from its beginning up to that point,
  after the misfire rule has been applied to what it missed.
- Notifications: inserting occurrences due soon notifies `wheel_due` with
  the partitions and the earliest instant; the owner loads that partition
  from that instant up to where the window has been loaded, so a job
  created for "in 30 s" is in the wheel within milliseconds. Notifications
  that arrive while one is handled are merged and handled as one
  (`wheel.store.notifications`).
- The catch-up scan, the safety net for a lost notification or a retry
  another node recorded: what became pending since its last pass (minus a
  slack for late commits), released at a bounded rate. It reads by
  `pending_since`, never the whole backlog. Most passes read only what is
  claimable now (a spike just made is not re-read every pass); every slack
  period, and on each (re)connect of the listener, a pass reads up to the
  loaded window's end.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Collection
from datetime import UTC, datetime, timedelta

from wheel.model.executions import DueOccurrence
from wheel.model.ids import ExecutionKey, JobId, PartitionId
from wheel.scheduler.engine import Engine
from wheel.store import Store, notifications
from wheel.store.notifications import Notification
from wheel.store.occurrences import DueCursor

log = logging.getLogger(__name__)

_PAGE = 10_000
_EPSILON = timedelta(milliseconds=1)
_CATCH_UP_SLACK = timedelta(seconds=30)
"""The catch-up re-reads this much before its last pass: a row made pending by a
transaction that committed late (pending_since is its statement's or transaction's
start), or stamped by a database clock slightly behind ours."""
# The smallest key: a cursor (instant, this) starts exactly at the instant.
_SMALLEST_KEY = ExecutionKey(JobId(uuid.UUID(int=0)), datetime(1970, 1, 1, tzinfo=UTC))


class Loader:
    def __init__(self, engine: Engine, store: Store, *, dsn: str) -> None:
        self._engine = engine
        self._store = store
        self._dsn = dsn
        self._config = engine.config
        self.loaded_until: datetime | None = None
        """Every pending occurrence of an owned partition due before this is in the wheel."""
        self._loading_to: datetime | None = None
        self.listening = asyncio.Event()
        self._caught_up_from = self._engine.now() - _CATCH_UP_SLACK
        """The next near catch-up reads what became pending since this."""
        self._full_from = self._caught_up_from
        """The next full catch-up (up to the window's end) reads what became pending since this."""
        self._full_at = self._engine.now()
        """When the last full catch-up started."""
        self.acquiring: set[PartitionId] = set()
        """Partitions owned but not loaded yet (`load_partition` applies the misfire rule
        first): the catch-up and notifications leave them to it."""

    def _bound(self) -> datetime:
        """How far a notified or new partition must be loaded to join the window."""
        bounds = [b for b in (self.loaded_until, self._loading_to) if b is not None]
        return max(bounds) if bounds else self._engine.now() + self._config.window

    async def _load(
        self,
        partitions: Collection[PartitionId],
        before: datetime,
        after: datetime | None = None,
        *,
        spread: bool = False,
        created_after: datetime | None = None,
    ) -> int:
        if not partitions:
            return 0
        cursor = DueCursor(after, _SMALLEST_KEY) if after is not None else None
        added = 0
        while True:
            page = await self._store.occurrences.load_due(
                partitions, before, after=cursor, limit=_PAGE, created_after=created_after
            )
            added += self._add(page, spread=spread)
            if len(page) < _PAGE:
                return added
            last = page[-1]
            cursor = DueCursor(last.fire_at, last.key)

    def _add(self, page: list[DueOccurrence], *, spread: bool) -> int:
        rate = self._config.catch_up_rate_per_s if spread else None
        return self._engine.add_due(page, spread_per_s=rate)

    async def tick(self) -> int:
        """Extend the window: load the slice between the last load and now + window."""
        target = self._engine.now() + self._config.window
        self._loading_to = target
        start = self.loaded_until
        added = await self._load(list(self._engine.owned), target, start)
        self.loaded_until = target
        return added

    async def load_partition(self, partition: PartitionId) -> int:
        """Bring a newly owned partition into the window (the misfire rule applied first)."""
        epochs = {partition: self._engine.owned[partition]}
        skipped = await self._store.occurrences.apply_misfire(epochs)
        self._engine.note_skipped("misfire", skipped)
        if skipped:
            log.info("loader.misfire_skipped", extra={"partition": partition, "skipped": skipped})
        return await self._load([partition], self._bound(), spread=True)

    async def catch_up(self, *, full: bool = False) -> int:
        """Pending occurrences not in the wheel (a notification was lost, or another node
        recorded a retry of ours): whatever became pending since the last pass.

        A near pass reads what is claimable now; what fires later is in the wheel by its
        notification, or read by the next full pass, which reaches the loaded window's end
        (forced by `full`, otherwise one every slack period). Either re-reads the slack
        before its last pass, so a row is read a few times at most, not every pass.

        No misfire rule here: overdue rows of owned partitions are mostly ones
        this node holds, waiting for credit, a breaker or an overlap. The rule
        applies on acquisition, to notified past instants, and at the claim to a
        run that waited past its grace (`wheel_claim`).
        """
        acquiring = self.acquiring
        owned = {p: epoch for p, epoch in self._engine.owned.items() if p not in acquiring}
        if not owned:
            return 0
        started = self._engine.now()
        full = full or started - self._full_at >= _CATCH_UP_SLACK
        if full:
            since, before = self._full_from, self._bound()
        else:
            since = self._caught_up_from
            before = started + timedelta(milliseconds=self._config.prefetch_ms)
        rows = await self._store.occurrences.load_requeued(list(owned), since, before)
        self._caught_up_from = started - _CATCH_UP_SLACK
        if full:
            self._full_from, self._full_at = self._caught_up_from, started
        added = self._add(rows, spread=True)
        if added:
            log.info("loader.caught_up", extra={"added": added, "read": len(rows), "full": full})
        return added

    async def _caught_up_fully(self) -> int:
        return await self.catch_up(full=True)

    async def notified(self, notification: Notification) -> int:
        """Load what a (merged) notification names: its partitions from their earliest
        instant up to the loaded window's end."""
        earliest = notification.earliest
        owned = self._engine.owned
        if earliest is None:
            return await self._load([p for p in owned if p not in self.acquiring], self._bound())
        now = self._engine.now()
        added = 0
        for partition, instant in earliest.items():
            if partition not in owned or partition in self.acquiring:
                continue  # not ours, or about to be loaded whole
            bound = self._bound()
            if instant >= bound:
                continue  # the window will reach it
            if instant < now - timedelta(seconds=1):
                misfired = await self._store.occurrences.apply_misfire(
                    {partition: owned[partition]}
                )
                self._engine.note_skipped("misfire", misfired)
            added += await self._load(
                [partition], bound, instant - _EPSILON, created_after=notification.created_at
            )
        return added

    async def listen(self) -> None:
        """Follow `wheel_due` notifications in batches for as long as the node runs."""
        await notifications.listen(
            self._dsn, self.notified, connected=self._caught_up_fully, listening=self.listening
        )
