"""The batcher: whatever queued during a round trip becomes the next batch; failures retry."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from wheel.errors import StoreError, StoreUnavailable
from wheel.scheduler.batcher import RETRY_MAX_S, RETRY_MIN_S, UNAVAILABLE_RETRY_MAX_S, Batcher


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


@pytest.mark.parametrize(
    ("error", "cap_s"),
    [(StoreUnavailable("cannot reach Postgres"), UNAVAILABLE_RETRY_MAX_S),
     (StoreError("Postgres error (XX000)"), RETRY_MAX_S)],
)  # fmt: skip
async def test_a_batch_the_store_refuses_is_retried_after_a_backoff_that_doubles(
    error: StoreError, cap_s: float
) -> None:
    """Unreachable, it is tried again at least every half second (back as soon as Postgres
    is); any other store error backs off further."""
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    async def refused(batch: list[int]) -> None:
        if len(delays) < 10:
            raise error

    batcher = Batcher("test", refused, max_batch=10, sleep=sleep)
    batcher.add(1)
    assert list(batcher.pending()) == [1]
    await asyncio.wait_for(batcher.flush(), 10)
    await batcher.close()
    doubling = [min(RETRY_MIN_S * 2**n, cap_s) for n in range(10)]
    assert delays == pytest.approx(doubling)
    assert list(batcher.pending()) == []


async def test_closing_ends_a_worker_whose_handler_lost_the_cancellation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """psycopg_pool can return a connection to a cancelled task as if it had not been
    (psycopg#1345): the handler then goes on, and close cancels it again."""
    monkeypatch.setattr("wheel.cancelling.AGAIN_S", 0.05)
    started = asyncio.Event()

    async def deaf(batch: list[int]) -> None:
        started.set()
        with contextlib.suppress(asyncio.CancelledError):  # lost, as in the race
            await asyncio.sleep(3600)
        await asyncio.sleep(3600)

    batcher = Batcher("test", deaf, max_batch=1)
    batcher.add(1)
    await started.wait()
    closing = asyncio.ensure_future(batcher.close())
    done, _ = await asyncio.wait({closing}, timeout=10)  # it hung for good before
    assert closing in done
