"""Collect items from many callers and hand them on in batches, a few batches at a time.

Heartbeats and results arrive one message at a time from many executor
streams; the store takes them a thousand per statement. A `Batcher` does
not wait to fill a batch: whatever has queued up while the previous
statements ran becomes the next batch, so latency stays one round trip when
it is quiet and batches grow by themselves under load.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Generic, TypeVar

from wheel.cancelling import end
from wheel.errors import StoreUnavailable, WheelError

T = TypeVar("T")

log = logging.getLogger(__name__)

RETRY_MIN_S = 0.05
RETRY_MAX_S = 2.0
UNAVAILABLE_RETRY_MAX_S = 0.5
"""While the store is unreachable a batch is tried again at least this often: the pool
waits for a connection meanwhile, and work resumes as soon as Postgres is back."""


class Batcher(Generic[T]):
    """`add` items; `handle(batch)` runs with up to `max_batch` of them, `concurrency` at once.

    A batch whose handler raises is retried with backoff, doubling from
    RETRY_MIN_S up to UNAVAILABLE_RETRY_MAX_S while the store is unreachable
    and RETRY_MAX_S after any other error: items are delayed, never dropped.
    """

    def __init__(
        self,
        name: str,
        handle: Callable[[list[T]], Awaitable[None]],
        *,
        max_batch: int,
        concurrency: int = 1,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """`sleep` waits out a backoff (a test's may only note it)."""
        self._name = name
        self._sleep = sleep
        self._handle = handle
        self._max_batch = max_batch
        self._items: list[T] = []
        self._handling: dict[int, list[T]] = {}
        """The batches being handled (retried, perhaps), by worker."""
        self._ready = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._busy = 0
        self._tasks = [
            asyncio.create_task(self._work(i), name=f"{name} batcher {i}")
            for i in range(concurrency)
        ]

    def add(self, item: T) -> None:
        self._items.append(item)
        self._idle.clear()
        self._ready.set()

    def __len__(self) -> int:
        return len(self._items)

    def pending(self) -> Iterator[T]:
        """Every item added and not yet handled: queued, or in a batch being handled."""
        for batch in self._handling.values():
            yield from batch
        yield from self._items

    async def flush(self) -> None:
        """Return once everything added so far has been handled."""
        while self._items or self._busy:
            await self._idle.wait()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            await end(task)  # a cancellation psycopg_pool lost is repeated

    async def _work(self, worker: int) -> None:
        while True:
            await self._ready.wait()
            if not self._items:
                self._ready.clear()
                continue
            batch = self._items[: self._max_batch]
            del self._items[: self._max_batch]
            if not self._items:
                self._ready.clear()
            self._busy += 1
            self._handling[worker] = batch
            try:
                await self._retrying(batch)
            finally:
                del self._handling[worker]
                self._busy -= 1
                if not self._items and not self._busy:
                    self._idle.set()

    async def _retrying(self, batch: list[T]) -> None:
        delay = RETRY_MIN_S
        while True:
            try:
                await self._handle(batch)
                return
            except asyncio.CancelledError:
                raise
            except WheelError as exc:  # the store away: delayed, never dropped
                log.warning(
                    "batcher.failed",
                    extra={"batcher": self._name, "size": len(batch), "error": str(exc),
                           "retry_s": delay},
                )  # fmt: skip
                unreachable = isinstance(exc, StoreUnavailable)
                cap_s = UNAVAILABLE_RETRY_MAX_S if unreachable else RETRY_MAX_S
            except Exception:  # a bug: say where, and still keep the items
                log.exception("batcher.failed", extra={"batcher": self._name, "size": len(batch)})
                cap_s = RETRY_MAX_S
            await self._sleep(delay)  # backoff: the failure is not over by the next instant
            delay = min(delay * 2, cap_s)
