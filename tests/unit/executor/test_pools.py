"""PoolSlots: concurrency shared by every stream; what waits starts in start_at order."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from wheel.executor.pools import PoolSlots

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def test_waiters_get_slots_earliest_start_at_first() -> None:
    slots = PoolSlots(1)
    await slots.acquire(T0)
    started: asyncio.Queue[str] = asyncio.Queue()

    async def wait(name: str, offset_s: int) -> None:
        await slots.acquire(T0 + timedelta(seconds=offset_s))
        started.put_nowait(name)

    waiters = [
        asyncio.create_task(wait("late", 5)),
        asyncio.create_task(wait("early", 1)),
        asyncio.create_task(wait("tie, arrived after early", 1)),
    ]
    await asyncio.sleep(0)  # one loop turn: all three reach acquire()
    assert (slots.free, slots.waiting) == (0, 3)
    for expected in ("early", "tie, arrived after early", "late"):
        slots.release()
        assert await asyncio.wait_for(started.get(), 5) == expected
    await asyncio.gather(*waiters)
    slots.release()
    assert slots.free == 1


async def test_a_cancelled_waiter_passes_its_slot_on() -> None:
    slots = PoolSlots(1)
    await slots.acquire(T0)
    first = asyncio.create_task(slots.acquire(T0))
    second = asyncio.create_task(slots.acquire(T0 + timedelta(seconds=1)))
    await asyncio.sleep(0)
    slots.release()  # hands the slot to `first`...
    first.cancel()  # ...which is cancelled before it runs: the slot must reach `second`
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 5)
    assert (slots.free, slots.waiting) == (0, 0)
    slots.release()
    assert slots.free == 1
