"""A cancellation a library loses (psycopg_pool can: psycopg#1345) does not keep a loop
running, nor a stop waiting for it."""

from __future__ import annotations

import asyncio

import pytest

from wheel import cancelling
from wheel.cancelling import cancelled_meanwhile, end
from wheel.scheduler.periodic import every


async def _borrow_losing_the_cancel(started: asyncio.Event) -> None:
    """What psycopg_pool's getconn does in the race: a cancel arrives, and it returns."""
    started.set()
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        return


async def test_a_periodic_loop_ends_when_its_work_lost_the_cancellation() -> None:
    started = asyncio.Event()
    task = every("lossy", 0.01, lambda: _borrow_losing_the_cancel(started))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=10)


async def test_end_cancels_again_a_task_that_did_not_hear_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cancelling, "AGAIN_S", 0.05)
    started = asyncio.Event()

    async def deaf_once() -> None:
        await _borrow_losing_the_cancel(started)
        await asyncio.sleep(3600)  # went on as if never cancelled

    task = asyncio.create_task(deaf_once())
    await started.wait()
    await asyncio.wait_for(end(task), timeout=10)
    assert task.cancelled()


async def test_end_raises_what_the_task_raised() -> None:
    async def broken() -> None:
        raise ValueError("a bug")

    task = asyncio.create_task(broken())
    await asyncio.wait({task})
    with pytest.raises(ValueError, match="a bug"):
        await end(task)


async def test_nothing_is_raised_in_a_task_nobody_cancelled() -> None:
    cancelled_meanwhile()
