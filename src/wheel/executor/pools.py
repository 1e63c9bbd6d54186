"""PoolSlots: a pool's concurrency, shared by every stream, with a queue ordered by start_at.

Each stream is granted the pool's whole concurrency as credit, so with two
nodes up to twice as many dispatches may be here as may run. Those beyond
the free slots wait in start_at order (earliest first, ties in arrival
order) and start as slots are released. Not thread-safe: the event loop's.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import datetime


class PoolSlots:
    def __init__(self, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        self.free = concurrency
        self._waiters: list[tuple[datetime, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @property
    def waiting(self) -> int:
        return sum(not future.done() for _, _, future in self._waiters)

    async def acquire(self, start_at: datetime) -> None:
        """Take a slot, waiting behind every waiter due earlier; cancellation-safe."""
        if self.free > 0:  # then nobody waits: release() hands slots to waiters first
            self.free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (start_at, next(self._order), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # handed a slot just as we were cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)
                return
        self.free += 1
