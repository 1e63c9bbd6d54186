"""The batcher: whatever queued during a round trip becomes the next batch; failures retry."""

from __future__ import annotations

import asyncio

from wheel.scheduler.batcher import Batcher


async def test_items_queued_while_a_batch_runs_form_the_next_batch() -> None:
    batches: list[list[int]] = []
    gate = asyncio.Event()

    async def handle(batch: list[int]) -> None:
        batches.append(batch)
        await gate.wait()

    batcher = Batcher("test", handle, max_batch=3)
    batcher.add(0)
    await asyncio.sleep(0)  # let the worker take the first item
    for n in range(1, 6):
        batcher.add(n)
    gate.set()
    await batcher.flush()
    await batcher.close()
    assert batches == [[0], [1, 2, 3], [4, 5]]


async def test_a_failing_batch_is_retried_not_dropped() -> None:
    seen: list[list[int]] = []

    async def flaky(batch: list[int]) -> None:
        seen.append(batch)
        if len(seen) < 3:
            raise ConnectionError("store away")

    batcher = Batcher("test", flaky, max_batch=10)
    batcher.add(1)
    batcher.add(2)
    await asyncio.wait_for(batcher.flush(), 10)
    await batcher.close()
    assert seen == [[1, 2]] * 3
