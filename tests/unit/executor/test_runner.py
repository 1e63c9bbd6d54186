"""Execution: never starts before start_at, times out at the deadline, reports what happened."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest

from wheel.executor.context import TaskContext
from wheel.executor.messages import ERROR_LIMIT_BYTES, Dispatch, Outcome, Report
from wheel.executor.pools import PoolSlots
from wheel.executor.runner import Execution, Stop
from wheel.executor.tasks import Handler, TaskRegistry
from wheel.executor.threads import HandlerThreads
from wheel.model.ids import ExecutionKey, JobId


class PayloadError(Exception):
    pass


def now() -> datetime:
    return datetime.now(UTC)


def make_dispatch(*, start_in_s: float = 0.0, deadline_in_s: float = 30.0) -> Dispatch:
    job = JobId(uuid.uuid4())
    scheduled = now() + timedelta(seconds=start_in_s)
    return Dispatch(
        execution_id=ExecutionKey(job, scheduled).id,
        job_id=job,
        task_type="t",
        pool="default",
        payload=b"payload",
        attempt=1,
        fence=3,
        scheduled_for=scheduled,
        start_at=scheduled,
        deadline=now() + timedelta(seconds=deadline_in_s),
    )


@pytest.fixture
async def threads() -> AsyncIterator[HandlerThreads]:
    pool = HandlerThreads(4)
    yield pool
    pool.shutdown()


def execution(
    handler: Handler,
    threads: HandlerThreads,
    dispatch: Dispatch | None = None,
    *,
    slots: PoolSlots | None = None,
    heartbeat: Callable[[], None] = lambda: None,
    cancel_grace_s: float = 2.0,
) -> Execution:
    registry = TaskRegistry()
    task = registry.register("t", handler)
    return Execution(
        dispatch or make_dispatch(),
        task,
        slots=slots or PoolSlots(1),
        threads=threads,
        heartbeat=heartbeat,
        cancel_grace_s=cancel_grace_s,
    )


async def test_the_handler_never_starts_before_start_at(threads: HandlerThreads) -> None:
    started: list[datetime] = []

    async def handler(ctx: TaskContext) -> None:
        started.append(now())

    dispatch = make_dispatch(start_in_s=0.15)
    running = execution(handler, threads, dispatch)
    report = await running.run()
    assert report is not None
    assert report.outcome is Outcome.SUCCEEDED
    assert started[0] >= dispatch.start_at
    assert report.started_at is not None
    assert dispatch.start_at <= report.started_at <= started[0]
    assert report.finished_at >= started[0]


async def test_a_sync_handler_runs_on_a_worker_thread(threads: HandlerThreads) -> None:
    seen: list[tuple[str, bytes, int]] = []

    def handler(ctx: TaskContext) -> str:
        seen.append((threading.current_thread().name, ctx.payload, ctx.fence))
        return "ignored"

    report = await execution(handler, threads).run()
    assert report is not None
    assert (report.outcome, report.error, report.fence) == (Outcome.SUCCEEDED, "", 3)
    [(thread, payload, fence)] = seen
    assert thread != threading.current_thread().name
    assert thread.startswith("wheel-handler")
    assert (payload, fence) == (b"payload", 3)


async def test_an_async_handler_past_its_deadline_is_cancelled(threads: HandlerThreads) -> None:
    cancelled = asyncio.Event()

    async def handler(ctx: TaskContext) -> None:
        try:
            await asyncio.Event().wait()  # forever
        except asyncio.CancelledError:
            cancelled.set()
            raise

    report = await execution(handler, threads, make_dispatch(deadline_in_s=0.1)).run()
    assert report is not None
    assert report.outcome is Outcome.FAILED
    assert report.error.startswith("timeout: ")
    assert cancelled.is_set()


async def test_a_sync_handler_past_its_deadline_sees_cancel_event(threads: HandlerThreads) -> None:
    def handler(ctx: TaskContext) -> bool:
        return ctx.cancel_event.wait(30)

    running = execution(handler, threads, make_dispatch(deadline_in_s=0.1))
    report = await running.run()
    assert report is not None
    assert (report.outcome, report.error[:8]) == (Outcome.FAILED, "timeout:")
    assert running.context.cancelled


async def test_an_exception_fails_with_type_message_and_traceback(threads: HandlerThreads) -> None:
    def failing_handler(ctx: TaskContext) -> None:
        raise PayloadError("bad payload " + "x" * 10_000)

    report = await execution(failing_handler, threads).run()
    assert report is not None
    assert report.outcome is Outcome.FAILED
    assert report.error.startswith(f"{__name__}.PayloadError: bad payload xxx")
    assert "failing_handler" in report.error
    assert len(report.error.encode()) <= ERROR_LIMIT_BYTES


async def test_stopped_while_waiting(threads: HandlerThreads) -> None:
    calls: list[str] = []
    slots = PoolSlots(1)
    await slots.acquire(now())  # the pool is busy: both wait for a slot
    draining = execution(lambda ctx: calls.append("draining"), threads, slots=slots)
    cancelled = execution(lambda ctx: calls.append("cancelled"), threads, slots=slots)
    runs = [asyncio.create_task(draining.run()), asyncio.create_task(cancelled.run())]
    for _ in range(10):  # a few loop turns: run() -> its turn task -> acquire()
        await asyncio.sleep(0)
    assert (draining.phase, slots.waiting) == ("waiting", 2)
    draining.stop(Stop("shutdown"))
    cancelled.stop(Stop("cancelled", "operator"))
    not_started, failed = await asyncio.gather(*runs)
    assert isinstance(not_started, Report)
    assert isinstance(failed, Report)
    assert (not_started.outcome, not_started.error) == (
        Outcome.NOT_STARTED,
        "executor shutting down",
    )
    assert (failed.outcome, failed.error, failed.started_at) == (
        Outcome.FAILED,
        "cancelled: operator",
        None,
    )
    assert calls == []
    slots.release()
    assert slots.free == 1, "stopped waiters hold no slot"


async def test_a_stale_execution_is_cancelled_and_reports_nothing(threads: HandlerThreads) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def handler(ctx: TaskContext) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    running = execution(handler, threads)
    result = asyncio.create_task(running.run())
    await asyncio.wait_for(started.wait(), 10)
    running.stop(Stop("stale"))
    assert await result is None
    assert cancelled.is_set()


async def test_a_handler_ignoring_cancellation_is_abandoned_after_the_grace(
    threads: HandlerThreads,
) -> None:
    release = threading.Event()
    entered = threading.Event()

    def stubborn(ctx: TaskContext) -> None:
        entered.set()
        release.wait(30)

    running = execution(stubborn, threads, cancel_grace_s=0.05)
    result = asyncio.create_task(running.run())
    await asyncio.to_thread(entered.wait, 30)
    running.stop(Stop("cancelled", "enough"))
    report = await asyncio.wait_for(result, 10)
    assert report is not None
    assert (report.outcome, report.error) == (Outcome.FAILED, "cancelled: enough")
    assert not release.is_set(), "reported while the thread still runs"
    release.set()


async def test_heartbeat_from_a_handler_thread_reaches_the_loop(threads: HandlerThreads) -> None:
    loop_thread = threading.current_thread()
    beats: list[threading.Thread] = []
    beat = asyncio.Event()

    def on_beat() -> None:
        beats.append(threading.current_thread())
        beat.set()

    def handler(ctx: TaskContext) -> None:
        ctx.heartbeat()
        ctx.cancel_event.wait(30)

    running = execution(handler, threads, heartbeat=on_beat)
    result = asyncio.create_task(running.run())
    await asyncio.wait_for(beat.wait(), 10)
    assert beats == [loop_thread]
    running.stop(Stop("cancelled", "done"))
    await result
