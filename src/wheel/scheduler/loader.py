"""Keeping the wheel filled: the rolling window, due notifications, and the catch-up scan.

- The window: every `load_interval_s` the node loads the pending
  occurrences of its partitions due between where it loaded up to last time
  and now + window — only the new slice, never the whole window again.
- A newly acquired partition is loaded from its beginning up to that point,
  after the misfire rule has been applied to what it missed.
- Notifications: inserting occurrences due soon notifies `wheel_due` with
  the partitions and the earliest instant; the owner loads that partition
  from that instant up to where the window has been loaded, so a job
  created for "in 30 s" is in the wheel within milliseconds.
- The catch-up scan, the safety net for a lost notification: overdue
  pending occurrences not in the wheel (misfire rule first, then released
  at a bounded rate).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from wheel.model.executions import DueOccurrence
from wheel.model.ids import ExecutionKey, JobId, PartitionId
from wheel.scheduler.engine import Engine
from wheel.store import Store
from wheel.store.occurrences import DueCursor
from wheel.store.translate import translated

log = logging.getLogger(__name__)

CHANNEL = "wheel_due"
_PAGE = 10_000
_EPSILON = timedelta(milliseconds=1)
_LISTEN_RETRY_MAX_S = 5.0
# The smallest key: a cursor (instant, this) starts exactly at the instant.
_SMALLEST_KEY = ExecutionKey(JobId(uuid.UUID(int=0)), datetime(1970, 1, 1, tzinfo=UTC))


@dataclass(frozen=True, slots=True)
class Notification:
    earliest: dict[PartitionId, datetime] | None
    """Earliest fire_at per partition; None: rescan every owned partition."""
    created_at: datetime | None
    """When the notified rows were created (their transaction's start), if known."""


def parse_notification(payload: str) -> Notification:
    """'[<created ms>|]<partition>:<epoch ms>,...' or '*' (rescan everything)."""
    if payload == "*":
        return Notification(None, None)
    created_at = None
    created, bar, entries = payload.rpartition("|")
    try:
        if bar:
            created_at = datetime.fromtimestamp(int(created) / 1000, UTC)
        earliest: dict[PartitionId, datetime] = {}
        for entry in entries.split(","):
            partition, _, ms = entry.partition(":")
            earliest[PartitionId(int(partition))] = datetime.fromtimestamp(int(ms) / 1000, UTC)
    except ValueError:
        log.warning("loader.bad_notification", extra={"payload": payload[:200]})
        return Notification(None, None)
    return Notification(earliest, created_at)


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

    def _bound(self) -> datetime:
        """How far a notified or new partition must be loaded to join the window."""
        bounds = [b for b in (self.loaded_until, self._loading_to) if b is not None]
        return max(bounds) if bounds else datetime.now(UTC) + self._config.window

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
        target = datetime.now(UTC) + self._config.window
        self._loading_to = target
        start = self.loaded_until
        added = await self._load(list(self._engine.owned), target, start)
        self.loaded_until = target
        return added

    async def load_partition(self, partition: PartitionId) -> int:
        """Bring a newly owned partition into the window (the misfire rule applied first)."""
        epochs = {partition: self._engine.owned[partition]}
        skipped = await self._store.occurrences.apply_misfire(epochs)
        if skipped:
            log.info("loader.misfire_skipped", extra={"partition": partition, "skipped": skipped})
        return await self._load([partition], self._bound(), spread=True)

    async def catch_up(self) -> int:
        """Overdue pending occurrences that are not in the wheel (a notification was lost).

        No misfire rule here: overdue rows of owned partitions are mostly ones
        this node holds, waiting for credit, a breaker or an overlap; late, not
        missed. The rule applies on acquisition and to notified past instants.
        """
        owned = dict(self._engine.owned)
        if not owned:
            return 0
        added = await self._load(list(owned), datetime.now(UTC), spread=True)
        if added:
            log.info("loader.caught_up", extra={"added": added})
        return added

    async def notified(self, payload: str) -> int:
        notification = parse_notification(payload)
        earliest = notification.earliest
        owned = self._engine.owned
        if earliest is None:
            return await self._load(list(owned), self._bound())
        now = datetime.now(UTC)
        added = 0
        for partition, instant in earliest.items():
            if partition not in owned:
                continue
            bound = self._bound()
            if instant >= bound:
                continue  # the window will reach it
            if instant < now - timedelta(seconds=1):
                await self._store.occurrences.apply_misfire({partition: owned[partition]})
            added += await self._load(
                [partition], bound, instant - _EPSILON, created_after=notification.created_at
            )
        return added

    async def listen(self) -> None:
        """Follow `wheel_due` notifications for as long as the node runs; reconnect on loss."""
        delay = 0.1
        while True:
            try:
                async with translated():
                    conn: psycopg.AsyncConnection[Any] = await psycopg.AsyncConnection.connect(
                        self._dsn, autocommit=True
                    )
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    delay = 0.1
                    # Notifications sent while we were not listening: the catch-up scan.
                    await self.catch_up()
                    async for notify in conn.notifies():
                        try:
                            await self.notified(notify.payload)
                        except Exception as exc:
                            log.warning("loader.notified_failed", extra={"error": repr(exc)})
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("loader.listen_failed", extra={"error": repr(exc)})
            finally:
                self.listening.clear()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _LISTEN_RETRY_MAX_S)
