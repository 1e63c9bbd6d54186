"""`Executions` on a manual clock: held runs start at their instants, deadlines, the cancel
grace, a drain's timeout and the hand-backs come due when the clock says, with no waiting.

`Executions` reads the wall and monotonic clocks and sets its timers on a `ManualClock`;
its collaborators are small stand-ins (an outbox that keeps reports, a stream, a router).
Handlers are async, so everything runs on the test's loop; between clock moves the test
lets the loop run what is ready.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.executor.helpers import Kept
from wheel.executor.connection import Stream
from wheel.executor.context import TaskContext
from wheel.executor.executions import STALLED_S, Executions
from wheel.executor.messages import Dispatch, Outcome, Report
from wheel.executor.routing import Router
from wheel.executor.tasks import TaskRegistry
from wheel.executor.threads import HandlerThreads
from wheel.model.ids import ExecutionKey, JobId
from wheel.timingwheel import ManualClock

GRACE_S = 2.0


class _Bench:
    def __init__(self, concurrency: int = 4, max_ready_wait_s: float = 10.0) -> None:
        self.clock = ManualClock()
        self.kept = Kept()
        self.registry = TaskRegistry()
        self.stream = Stream("n1", "n1", 60.0)
        self.started: dict[str, datetime] = {}
        self.threads = HandlerThreads(1)
        _BENCHES.append(self)
        self.executions = Executions(
            self.registry, {"default": concurrency}, threads=self.threads,
            router=Router(owner_of=lambda _: None), outbox=self.kept,  # type: ignore[arg-type]
            hold=100, cancel_grace_s=GRACE_S, max_ready_wait_s=max_ready_wait_s,
            wall=self.now, clock=lambda: self.clock.monotonic_ms() / 1000, alarm=self.clock,
        )  # fmt: skip
        self.executions.stream_up(self.stream)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.wall_ms() / 1000, UTC)

    def task(self, handler: Callable[[TaskContext], Awaitable[None]]) -> None:
        async def noted(ctx: TaskContext) -> None:
            self.started[ctx.execution_id] = self.now()
            await handler(ctx)

        self.registry.register("t", noted)

    def send(self, *, start_in_s: float = 0.0, deadline_in_s: float = 60.0) -> Dispatch:
        job = JobId(uuid.uuid4())
        at = self.now() + timedelta(seconds=start_in_s)
        dispatch = Dispatch(
            execution_id=ExecutionKey(job, at).id, job_id=job, task_type="t", pool="default",
            payload=b"", attempt=1, fence=3, scheduled_for=at, start_at=at,
            deadline=self.now() + timedelta(seconds=deadline_in_s),
        )  # fmt: skip
        self.executions.on_dispatch(self.stream, dispatch)
        return dispatch

    async def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        await _turns()

    def report(self, dispatch: Dispatch) -> Report | None:
        return self.kept.of(dispatch)


@pytest.fixture(autouse=True)
async def _threads_shut() -> AsyncIterator[None]:
    yield
    for bench in _BENCHES:
        bench.threads.shutdown()
    _BENCHES.clear()


_BENCHES: list[_Bench] = []


async def _turns() -> None:
    """Let the loop run what is ready (no time passes: the clock is manual)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def _quick(ctx: TaskContext) -> None:
    return None


async def _forever(ctx: TaskContext) -> None:
    await asyncio.Event().wait()


async def test_held_runs_start_at_their_instants_in_order_from_one_timer() -> None:
    b = _Bench()
    b.task(_quick)
    later, sooner = b.send(start_in_s=5.0), b.send(start_in_s=2.0)
    assert b.clock.pending_alarms() == [2000], "one timer, for the earliest"
    await b.advance(1999)
    assert b.started == {}, "never early"
    await b.advance(1)
    assert b.started == {sooner.execution_id: sooner.start_at}, "at its instant, not later"
    assert b.clock.pending_alarms()[0] == 5000, "re-armed for the next"
    await b.advance(2999)
    assert later.execution_id not in b.started
    await b.advance(1)
    assert b.started[later.execution_id] == later.start_at
    for dispatch in (sooner, later):
        report = b.report(dispatch)
        assert report is not None
        assert (report.outcome, report.started_at) == (Outcome.SUCCEEDED, dispatch.start_at)


async def test_each_running_run_is_stopped_at_its_own_deadline() -> None:
    b = _Bench()
    b.task(_forever)
    late, soon = b.send(deadline_in_s=30.0), b.send(deadline_in_s=10.0)
    await _turns()
    await b.advance(9999)
    assert b.report(soon) is None, "not before its deadline"
    await b.advance(1)
    report = b.report(soon)
    assert report is not None
    assert (report.outcome, report.error[:8]) == (Outcome.FAILED, "timeout:")
    assert b.executions.phase(*late.key) == "running"
    await b.advance(19_999)
    assert b.report(late) is None
    await b.advance(1)
    assert b.report(late) is not None
    assert b.clock.pending_alarms() == [], "no deadline timer is left armed"


async def test_a_handler_ignoring_its_cancel_is_abandoned_after_the_grace() -> None:
    b = _Bench()
    release = asyncio.Event()

    async def stubborn(ctx: TaskContext) -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue  # ignores it

    b.task(stubborn)
    dispatch = b.send()
    await _turns()
    try:
        b.executions.on_cancel(*dispatch.key, "enough")
        await b.advance(round(GRACE_S * 1000) - 1)
        assert b.report(dispatch) is None, "its grace is not over"
        await b.advance(1)
        report = b.report(dispatch)
        assert report is not None
        assert (report.outcome, report.error) == (Outcome.FAILED, "cancelled: enough")
        assert len(b.executions) == 0, "abandoned: nothing waits for it"
    finally:
        release.set()
        await _turns()


async def test_a_drain_waits_its_timeout_for_running_runs_then_stops_them() -> None:
    b = _Bench()
    b.task(_forever)
    running = b.send()
    await _turns()
    drained = asyncio.create_task(b.executions.drain(timeout_s=5.0))
    await _turns()
    await b.advance(4999)
    assert not drained.done()
    assert b.executions.phase(*running.key) == "running", "given its drain timeout"
    await b.advance(1)
    assert drained.done()
    report = b.report(running)
    assert report is not None
    assert (report.outcome, report.error) == (Outcome.FAILED, "executor shutting down")
    await drained


async def test_a_run_due_while_the_process_was_frozen_is_handed_back_unstarted() -> None:
    b = _Bench()
    b.task(_quick)
    on_time, frozen = b.send(start_in_s=1.0), b.send(start_in_s=2.0)
    await b.advance(1000)
    assert on_time.execution_id in b.started
    b.clock.step_wall(round(STALLED_S * 1000) + 1000)  # frozen: the wall moved on, timers not
    await b.advance(1000)
    report = b.report(frozen)
    assert report is not None
    assert (report.outcome, report.started_at) == (Outcome.NOT_STARTED, None)
    assert report.error.startswith("handed back: this executor was stalled or frozen for 6 s")


async def test_a_due_run_waiting_for_a_slot_is_handed_back_after_its_longest_wait() -> None:
    b = _Bench(concurrency=1, max_ready_wait_s=10.0)
    b.task(_forever)
    running, waiting = b.send(), b.send()
    await _turns()
    await b.advance(10_000)
    assert b.executions.heartbeats_for(b.stream) == [running.key, waiting.key], "not yet"
    await b.advance(1)
    assert b.executions.heartbeats_for(b.stream) == [running.key]
    report = b.report(waiting)
    assert report is not None
    assert report.error == "handed back: waited 10 s for a slot in pool 'default'"
    await b.executions.drain(timeout_s=0)
