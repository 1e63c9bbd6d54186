"""`wheel_due` notifications: what inserting or re-queueing occurrences tells their owner.

The payload is written by `queries/notify_due.sql` and the insert trigger:
`[<created ms>|]<partition>:<earliest fire_at ms>,...`, or `*` (rescan every
owned partition). `listen` keeps one LISTEN connection open (reconnecting
with backoff) and hands notifications over in batches — everything that
arrived while the previous batch was being handled, merged into one
`Notification` — so a burst of inserts costs one load, not one per insert.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg

from wheel.errors import WheelError
from wheel.model.ids import PartitionId
from wheel.store.translate import translated

log = logging.getLogger(__name__)

CHANNEL = "wheel_due"
RETRY_MAX_S = 0.5
"""While Postgres is away the listener tries again at least this often: back as soon as it
is (what was notified meanwhile, the scan on reconnect finds)."""


@dataclass(frozen=True, slots=True)
class Notification:
    earliest: dict[PartitionId, datetime] | None
    """Earliest fire_at per partition; None: rescan every owned partition."""
    created_at: datetime | None
    """When the notified rows were created (their transaction's start), if known: a load
    may skip older rows. None when any row may be older (a resume, a retry)."""


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
        log.warning("notifications.unreadable", extra={"payload": payload[:200]})
        return Notification(None, None)
    return Notification(earliest, created_at)


def merge(notifications: Iterable[Notification]) -> Notification:
    """One notification meaning all of them: per partition the earliest instant, the
    oldest creation (None if any is unknown), a rescan if any asks for one."""
    earliest: dict[PartitionId, datetime] = {}
    created: list[datetime | None] = []
    for notification in notifications:
        if notification.earliest is None:
            return Notification(None, None)
        for partition, instant in notification.earliest.items():
            known = earliest.get(partition)
            earliest[partition] = instant if known is None else min(known, instant)
        created.append(notification.created_at)
    oldest = None if None in created or not created else min(c for c in created if c)
    return Notification(earliest, oldest)


async def listen(
    dsn: str,
    handle: Callable[[Notification], Awaitable[object]],
    *,
    connected: Callable[[], Awaitable[object]],
    listening: asyncio.Event,
) -> None:
    """Follow `wheel_due` until cancelled: `connected()` after each (re)connect (what was
    sent while nobody listened needs a scan), then `handle` for every batch."""
    delay_s = 0.1
    failures = 0
    while True:
        try:
            async with translated():
                conn: psycopg.AsyncConnection[Any] = await psycopg.AsyncConnection.connect(
                    dsn, autocommit=True
                )
            async with conn:
                await conn.execute(f"LISTEN {CHANNEL}")
                listening.set()
                if failures:
                    log.info("notifications.listening", extra={"failures": failures})
                delay_s, failures = 0.1, 0
                await connected()
                await _follow(conn, handle)
        except asyncio.CancelledError:
            raise
        except (psycopg.Error, OSError, WheelError) as exc:  # Postgres away, or it broke
            failures += 1
            if failures == 1:  # once per outage: the pool's log says the rest
                log.warning("notifications.listen_failed", extra={"error": repr(exc)})
        except Exception:  # a bug: say where, and listen again
            log.exception("notifications.listen_failed")
        finally:
            listening.clear()
        await asyncio.sleep(delay_s)  # backoff while Postgres is away
        delay_s = min(delay_s * 2, RETRY_MAX_S)


async def _follow(
    conn: psycopg.AsyncConnection[Any], handle: Callable[[Notification], Awaitable[object]]
) -> None:
    """Read notifications on one task and handle them in batches on another."""
    arrived: asyncio.Queue[Notification] = asyncio.Queue()

    async def read() -> None:
        async for notify in conn.notifies():
            arrived.put_nowait(parse_notification(notify.payload))

    reader = asyncio.create_task(read(), name="notifications read")
    waiting: asyncio.Future[Notification] | None = None
    try:
        while True:
            waiting = asyncio.ensure_future(arrived.get())
            done, _ = await asyncio.wait({waiting, reader}, return_when=asyncio.FIRST_COMPLETED)
            if waiting not in done:
                reader.result()  # the connection broke: raise how
                return
            batch = [waiting.result()]
            while not arrived.empty():
                batch.append(arrived.get_nowait())
            try:
                await handle(merge(batch))
            except WheelError as exc:  # the store away: the catch-up scan covers it
                log.warning("notifications.handle_failed", extra={"error": str(exc)})
            except Exception:  # a bug: say where; the catch-up scan covers the batch
                log.exception("notifications.handle_failed")
    finally:
        # Cancelled while waiting, the get must end too: left pending, it outlived the
        # node (a task per stop, destroyed pending when the loop closed).
        pending = [task for task in (waiting, reader) if task is not None]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
