"""Runs on one executor: held until start_at, started in order as slots free, timed out at the
deadline, stopped early as asked, and reported — driven by `Executions`, with no network.

The collaborators around it are small stand-ins: a stream (credit, heartbeats), a router
and an outbox that keeps what is reported.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.unit.executor.helpers import Kept
from wheel.executor.connection import Stream
from wheel.executor.context import TaskContext
from wheel.executor.executions import Executions, _Pool
from wheel.executor.messages import ERROR_LIMIT_BYTES, Dispatch, Outcome
from wheel.executor.routing import Router
from wheel.executor.tasks import Handler, TaskRegistry
from wheel.executor.threads import HandlerThreads
from wheel.model.ids import ExecutionKey, JobId
from wheel.timingwheel import GcGovernor, GcPolicy


class PayloadError(Exception):
    pass


def now() -> datetime:
    return datetime.now(UTC)


def make_dispatch(
    *, start_in_s: float = 0.0, deadline_in_s: float = 30.0, task: str = "t", fence: int = 3
) -> Dispatch:
    job = JobId(uuid.uuid4())
    scheduled = now() + timedelta(seconds=start_in_s)
    return Dispatch(
        execution_id=ExecutionKey(job, scheduled).id,
        job_id=job,
        task_type=task,
        pool="default",
        payload=b"payload",
        attempt=1,
        fence=fence,
        scheduled_for=scheduled,
        start_at=scheduled,
        deadline=now() + timedelta(seconds=deadline_in_s),
    )


HOLD = 10_000


async def noop(ctx: TaskContext) -> None:
    """Nothing."""


class Harness:
    def __init__(
        self, threads: HandlerThreads, concurrency: int, grace_s: float,
        governor: GcGovernor | None = None, max_ready_wait_s: float = 10.0,
    ) -> None:  # fmt: skip
        self.registry = TaskRegistry()
        self.kept = Kept()
        self.router = Router(owner_of=lambda _: None)
        self.stream = Stream("n1", "n1", 60.0)
        self.ahead_s = 0.0
        """How far the executor's wall clock is moved on (a test moves it; nothing waits)."""
        self.executions = Executions(
            self.registry, {"default": concurrency}, threads=threads, router=self.router,
            outbox=self.kept, hold=HOLD, cancel_grace_s=grace_s,  # type: ignore[arg-type]
            governor=governor, max_ready_wait_s=max_ready_wait_s,
            wall=lambda: now() + timedelta(seconds=self.ahead_s),
        )  # fmt: skip
        self.executions.stream_up(self.stream)

    def task(self, handler: Handler, name: str = "t") -> None:
        self.registry.register(name, handler)

    def send(self, dispatch: Dispatch) -> Dispatch:
        self.executions.on_dispatch(self.stream, dispatch)
        return dispatch


@pytest.fixture
async def threads() -> AsyncIterator[HandlerThreads]:
    pool = HandlerThreads(4)
    yield pool
    pool.shutdown()


@pytest.fixture
def harness(threads: HandlerThreads) -> Callable[..., Harness]:
    def make(
        concurrency: int = 1,
        grace_s: float = 2.0,
        governor: GcGovernor | None = None,
        max_ready_wait_s: float = 10.0,
    ) -> Harness:
        return Harness(threads, concurrency, grace_s, governor, max_ready_wait_s)

    return make


async def test_the_handler_never_starts_before_start_at(harness: Callable[..., Harness]) -> None:
    h = harness()
    started: list[datetime] = []

    async def handler(ctx: TaskContext) -> None:
        started.append(now())

    h.task(handler)
    dispatch = h.send(make_dispatch(start_in_s=0.15))
    assert h.executions.phase(*dispatch.key) == "waiting", "held until its instant"
    report = await h.kept.report_of(dispatch)
    assert report.outcome is Outcome.SUCCEEDED
    assert started[0] >= dispatch.start_at
    assert report.started_at is not None
    assert dispatch.start_at <= report.started_at <= started[0]
    assert report.finished_at >= started[0]


async def test_held_runs_start_at_their_instants_in_order_from_one_timer(
    harness: Callable[..., Harness],
) -> None:
    h = harness(concurrency=100)
    started: list[tuple[str, datetime]] = []

    async def handler(ctx: TaskContext) -> None:
        started.append((ctx.execution_id, now()))

    h.task(handler)
    offsets = [0.3, 0.1, 0.2, 0.1, 0.25]
    sent = [h.send(make_dispatch(start_in_s=s)) for s in offsets]
    for dispatch in sent:
        await h.kept.report_of(dispatch)
    by_id = {d.execution_id: d for d in sent}
    assert all(at >= by_id[ident].start_at for ident, at in started), "never early"
    order = [by_id[ident].start_at for ident, _ in started]
    assert order == sorted(order), "in start_at order"


async def test_a_full_pool_starts_what_waits_earliest_start_first(
    harness: Callable[..., Harness],
) -> None:
    h = harness(concurrency=1)
    release = asyncio.Event()
    order: list[str] = []

    async def handler(ctx: TaskContext) -> None:
        order.append(ctx.execution_id)
        await release.wait()

    h.task(handler)
    first = h.send(make_dispatch())
    later = h.send(make_dispatch(start_in_s=-1))
    earlier = h.send(make_dispatch(start_in_s=-2))
    assert h.executions.phases() == {"running": 1, "waiting": 2}
    release.set()
    for dispatch in (first, earlier, later):
        assert (await h.kept.report_of(dispatch)).outcome is Outcome.SUCCEEDED
    assert order == [first.execution_id, earlier.execution_id, later.execution_id]


async def test_a_sync_handler_runs_on_a_worker_thread(harness: Callable[..., Harness]) -> None:
    h = harness()
    seen: list[tuple[str, bytes, int]] = []

    def handler(ctx: TaskContext) -> str:
        seen.append((threading.current_thread().name, ctx.payload, ctx.fence))
        return "ignored"

    h.task(handler)
    report = await h.kept.report_of(h.send(make_dispatch()))
    assert (report.outcome, report.error, report.fence) == (Outcome.SUCCEEDED, "", 3)
    [(thread, payload, fence)] = seen
    assert thread != threading.current_thread().name
    assert thread.startswith("wheel-handler")
    assert (payload, fence) == (b"payload", 3)


async def test_an_async_handler_past_its_deadline_is_cancelled(
    harness: Callable[..., Harness],
) -> None:
    h = harness()
    cancelled = asyncio.Event()

    async def handler(ctx: TaskContext) -> None:
        try:
            await asyncio.Event().wait()  # forever
        except asyncio.CancelledError:
            cancelled.set()
            raise

    h.task(handler)
    report = await h.kept.report_of(h.send(make_dispatch(deadline_in_s=0.1)))
    assert report.outcome is Outcome.FAILED
    assert report.error.startswith("timeout: ")
    assert cancelled.is_set()


async def test_each_run_is_stopped_at_its_own_deadline_whatever_order_they_came_in(
    harness: Callable[..., Harness],
) -> None:
    h = harness(concurrency=3)

    async def forever(ctx: TaskContext) -> None:
        await asyncio.Event().wait()

    h.task(forever)
    late = h.send(make_dispatch(deadline_in_s=30))
    soon = h.send(make_dispatch(deadline_in_s=0.1))
    report = await h.kept.report_of(soon)
    assert report.error.startswith("timeout: ")
    assert h.executions.phase(*late.key) == "running", "its deadline is 30 s away"
    await h.executions.drain(timeout_s=0)


async def test_runs_that_ended_leave_no_deadline_behind(
    harness: Callable[..., Harness],
) -> None:
    h = harness(concurrency=64)

    async def quick(ctx: TaskContext) -> None:
        return None

    h.task(quick)
    last = None
    for _ in range(5000):
        last = h.send(make_dispatch(deadline_in_s=3600))
        await asyncio.sleep(0)  # let it run and end
    assert last is not None
    await h.kept.report_of(last)
    assert len(h.kept.reports) == 5000
    # An hour's deadlines of ended runs would hold 5,000 entries; they are dropped as they
    # outnumber the runs held.
    assert len(h.executions._deadlines) <= 2 * 64 + 1024 + 1


async def test_a_sync_handler_past_its_deadline_sees_cancel_event(
    harness: Callable[..., Harness],
) -> None:
    h = harness()
    saw: list[bool] = []

    def handler(ctx: TaskContext) -> None:
        saw.append(ctx.cancel_event.wait(30))

    h.task(handler)
    report = await h.kept.report_of(h.send(make_dispatch(deadline_in_s=0.1)))
    assert (report.outcome, report.error[:8]) == (Outcome.FAILED, "timeout:")
    assert saw == [True]


async def test_an_exception_fails_with_type_message_and_traceback(
    harness: Callable[..., Harness],
) -> None:
    h = harness()

    def failing_handler(ctx: TaskContext) -> None:
        raise PayloadError("bad payload " + "x" * 10_000)

    h.task(failing_handler)
    report = await h.kept.report_of(h.send(make_dispatch()))
    assert report.outcome is Outcome.FAILED
    assert report.error.startswith(f"{__name__}.PayloadError: bad payload xxx")
    assert "failing_handler" in report.error
    assert len(report.error.encode()) <= ERROR_LIMIT_BYTES


async def test_a_runs_span_consumes_it_and_names_what_failed_it(
    harness: Callable[..., Harness], spans: InMemorySpanExporter
) -> None:
    h = harness(concurrency=3)

    def raising(ctx: TaskContext) -> None:
        raise PayloadError("bad payload")

    async def endless(ctx: TaskContext) -> None:
        await asyncio.Event().wait()

    h.task(raising, "raising")
    h.task(endless, "endless")
    h.task(noop, "noop")
    sent = {
        task: h.send(make_dispatch(task=task, deadline_in_s=0.2))
        for task in ("raising", "endless", "noop")
    }
    for dispatch in sent.values():
        await h.kept.report_of(dispatch)
    made = {(span.attributes or {})["wheel.task_type"]: span for span in spans.get_finished_spans()}
    assert {span.kind for span in made.values()} == {SpanKind.CONSUMER}
    assert (made["raising"].attributes or {})["error.type"] == f"{__name__}.PayloadError"
    assert (made["endless"].attributes or {})["error.type"] == "timeout"
    assert made["raising"].status.status_code is StatusCode.ERROR
    assert "error.type" not in (made["noop"].attributes or {})
    assert made["noop"].status.status_code is StatusCode.UNSET


async def test_stopped_while_waiting_for_its_instant_or_a_slot(
    harness: Callable[..., Harness],
) -> None:
    h = harness(concurrency=1)
    release = asyncio.Event()
    calls: list[str] = []

    async def busy(ctx: TaskContext) -> None:
        await release.wait()

    def record(ctx: TaskContext) -> None:
        calls.append(ctx.execution_id)

    h.task(busy, "busy")
    h.task(record)
    running = h.send(make_dispatch(task="busy"))
    waiting_slot = h.send(make_dispatch())
    held = h.send(make_dispatch(start_in_s=60))
    h.executions.on_cancel(*held.key, "operator")
    drained = asyncio.create_task(h.executions.drain(timeout_s=30))
    not_started = await h.kept.report_of(waiting_slot)
    assert (not_started.outcome, not_started.error) == (
        Outcome.NOT_STARTED,
        "executor shutting down",
    )
    failed = await h.kept.report_of(held)
    assert (failed.outcome, failed.error, failed.started_at) == (
        Outcome.FAILED,
        "cancelled: operator",
        None,
    )
    release.set()
    await drained
    assert (await h.kept.report_of(running)).outcome is Outcome.SUCCEEDED
    assert calls == []
    assert len(h.executions) == 0


async def test_a_deadline_that_passes_while_waiting_for_a_slot_is_not_started(
    harness: Callable[..., Harness],
) -> None:
    h = harness(concurrency=1)
    release = asyncio.Event()

    async def busy(ctx: TaskContext) -> None:
        await release.wait()

    h.task(busy)
    first = h.send(make_dispatch(deadline_in_s=30))
    late = h.send(make_dispatch(deadline_in_s=0.05))
    await asyncio.sleep(0.1)  # the fault: its deadline passes while the slot is taken
    release.set()
    report = await h.kept.report_of(late)
    assert (report.outcome, report.started_at) == (Outcome.NOT_STARTED, None)
    assert report.error.startswith("timeout: ")
    assert (await h.kept.report_of(first)).outcome is Outcome.SUCCEEDED


async def test_a_stale_run_is_cancelled_and_reports_nothing(
    harness: Callable[..., Harness],
) -> None:
    h = harness()
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def handler(ctx: TaskContext) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    h.task(handler)
    dispatch = h.send(make_dispatch())
    await asyncio.wait_for(started.wait(), 10)
    h.executions.on_stale_fence(*dispatch.key, 9)
    await asyncio.wait_for(cancelled.wait(), 10)
    while True:
        if h.executions.phase(*dispatch.key) is None:
            break
        await asyncio.sleep(0)  # the done callback runs on the next loop turn
    assert h.kept.reports == []
    assert h.stream.credit["default"] == 1 + HOLD, "its credit is back"


async def test_a_handler_ignoring_cancellation_is_abandoned_after_the_grace(
    harness: Callable[..., Harness],
) -> None:
    h = harness(grace_s=0.05)
    release = threading.Event()
    entered = threading.Event()

    def stubborn(ctx: TaskContext) -> None:
        entered.set()
        release.wait(30)

    h.task(stubborn)
    dispatch = h.send(make_dispatch())
    await asyncio.to_thread(entered.wait, 30)
    h.executions.on_cancel(*dispatch.key, "enough")
    report = await h.kept.report_of(dispatch)
    assert (report.outcome, report.error) == (Outcome.FAILED, "cancelled: enough")
    assert not release.is_set(), "reported while the thread still runs"
    release.set()


async def test_a_heartbeat_from_a_handler_thread_reaches_the_loop(
    harness: Callable[..., Harness],
) -> None:
    h = harness()
    asked = threading.Event()

    def handler(ctx: TaskContext) -> None:
        ctx.heartbeat()
        asked.set()
        ctx.cancel_event.wait(30)

    h.task(handler)
    dispatch = h.send(make_dispatch())
    await asyncio.to_thread(asked.wait, 30)
    async with asyncio.timeout(10):
        while True:
            sent = await h.stream.next_messages() or []
            if any(m.WhichOneof("body") == "heartbeats" for m in sent):
                break
    assert h.executions.heartbeats_for(h.stream) == [dispatch.key]
    h.executions.on_cancel(*dispatch.key, "done")
    await h.kept.report_of(dispatch)


async def test_runs_held_until_their_instant_are_not_heartbeated(
    harness: Callable[..., Harness],
) -> None:
    h = harness()
    h.task(lambda ctx: None)
    held = h.send(make_dispatch(start_in_s=60))
    assert h.executions.phase(*held.key) == "waiting"
    assert h.executions.heartbeats_for(h.stream) == [], "its lease outlasts the wait"
    h.executions.on_stale_fence(*held.key, 9)
    assert len(h.executions) == 0


async def test_a_spike_of_held_runs_all_start_and_report(harness: Callable[..., Harness]) -> None:
    h = harness(concurrency=64)

    async def noop(ctx: TaskContext) -> None:
        return None

    h.task(noop)
    at = now() + timedelta(seconds=1)  # midnight: all due at one instant
    sent = [h.send(dataclasses.replace(make_dispatch(), start_at=at)) for _ in range(5000)]
    assert h.executions.phases() == {"waiting": 5000}
    for dispatch in sent:
        report = await h.kept.report_of(dispatch)
        assert report.outcome is Outcome.SUCCEEDED
        assert report.started_at is not None
        assert report.started_at >= dispatch.start_at
    assert len(h.executions) == 0


class CountingGovernor(GcGovernor):
    def __init__(self, policy: GcPolicy) -> None:
        super().__init__(policy)
        self.collections = 0
        self.collected = asyncio.Event()

    def frozen_grown(self) -> bool:
        return True  # a few runs grow no real heap by a quarter: tested in test_gcpolicy

    def collect_frozen(self) -> int:
        self.collections += 1
        self.collected.set()
        return 0  # the collection itself is the governor's business, tested there


async def test_held_runs_are_frozen_out_of_the_collector_and_collected_once_idle(
    harness: Callable[..., Harness],
) -> None:
    governor = CountingGovernor(GcPolicy(freeze_every_added=2))
    h = harness(concurrency=4, governor=governor)
    h.task(lambda ctx: None)
    governor.start()
    try:
        sent = [h.send(make_dispatch(start_in_s=0.05)) for _ in range(4)]
        assert governor.freezes == 1 + 2, "at start, then one freeze per two runs received"
        assert governor.collections == 0, "nothing collected while runs are held"
        for dispatch in sent:
            await h.kept.report_of(dispatch)
        await asyncio.wait_for(governor.collected.wait(), 10)
        assert governor.collections == 1
    finally:
        governor.stop()


async def test_a_pool_that_falls_behind_takes_nothing_more_ahead_until_it_catches_up(
    harness: Callable[..., Harness],
) -> None:
    """Credit comes back only while fewer due runs wait than there are slots: runs past
    their instant wait under a lease, so a queue longer than that must stay in the store."""
    h = harness(concurrency=1)
    gates = [asyncio.Event() for _ in range(3)]
    started: list[int] = []

    async def busy(ctx: TaskContext) -> None:
        n = len(started)
        started.append(n)
        await gates[n].wait()

    h.task(busy)
    runs = [h.send(make_dispatch()) for _ in range(3)]  # one runs, two wait: behind
    granted = 1 + HOLD - 3
    assert h.stream.credit["default"] == granted
    gates[0].set()
    await h.kept.report_of(runs[0])
    assert h.stream.credit["default"] == granted, "behind: its credit is kept back"
    gates[1].set()
    await h.kept.report_of(runs[1])
    assert h.stream.credit["default"] == granted + 2, "caught up: what it kept back goes"
    gates[2].set()
    await h.kept.report_of(runs[2])
    assert h.stream.credit["default"] == 1 + HOLD


async def test_held_runs_whose_stream_ends_before_their_instant_are_handed_back(
    harness: Callable[..., Harness],
) -> None:
    """Its node gives them to another executor at once. What is due within the margin
    is kept until its instant, and not started then either while the stream is down."""
    h = harness(concurrency=4)
    h.task(noop)
    later = h.send(make_dispatch(start_in_s=30.0))
    soon = h.send(make_dispatch(start_in_s=0.3))
    h.stream.close()
    h.executions.stream_down(h.stream)
    handed = await h.kept.report_of(later)
    assert handed.outcome is Outcome.NOT_STARTED
    assert handed.error == "handed back: its stream to n1 ended first"
    assert h.executions.phase(*soon.key) == "waiting", "due within the margin: kept"
    at_its_instant = await h.kept.report_of(soon)  # its stream is still down then: not started
    assert (at_its_instant.outcome, at_its_instant.started_at) == (Outcome.NOT_STARTED, None)


async def test_a_due_run_that_waits_too_long_for_a_slot_is_handed_back(
    harness: Callable[..., Harness],
) -> None:
    """No lease has to cover a queue: whoever has room takes it (its credit is kept back
    while the pool is behind)."""
    h = harness(concurrency=1, max_ready_wait_s=10.0)
    release = asyncio.Event()

    async def busy(ctx: TaskContext) -> None:
        await release.wait()

    h.task(busy)
    running, waiting = h.send(make_dispatch()), h.send(make_dispatch())
    h.executions.heartbeats_for(h.stream)
    assert h.executions.phase(*waiting.key) == "waiting", "not yet"
    h.ahead_s = 10.5
    assert waiting.key not in h.executions.heartbeats_for(h.stream)
    handed = await h.kept.report_of(waiting)
    assert handed.outcome is Outcome.NOT_STARTED
    assert handed.error == "handed back: waited 10 s for a slot in pool 'default'"
    assert h.executions.phase(*running.key) == "running"
    release.set()
    assert (await h.kept.report_of(running)).outcome is Outcome.SUCCEEDED


def test_a_pool_that_knows_its_start_rate_holds_no_more_than_it_starts_in_its_backlog() -> None:
    pool = _Pool("default", concurrency=2, hold=1_000, backlog_s=5.0)
    assert pool.room == 1_000, "the rate unknown: all it may hold"
    pool.window_saturated = True  # runs waited for a slot in this window
    for n in range(11):
        pool.started(0.1 * n)  # the start at 1.0 s closes a saturated window: 11 in 1 s
    assert pool.rate == pytest.approx(11.0)
    assert pool.room == 55, "what it starts in 5 s"
    pool.held = 55
    assert not pool.behind
    pool.held = 56
    assert pool.behind, "more waits than it starts in 5 s: no credit back"
    pool.window_saturated = True
    for n in range(1, 6):
        pool.started(1.0 + 0.2 * n)  # 5 starts in the next second, still saturated
    assert pool.rate == pytest.approx(8.0), "smoothed: half the old, half the new"
    pool.window_saturated = False
    for n in range(1, 4):
        pool.started(2.0 + n)  # a window nobody waited in teaches nothing about capacity
    assert pool.rate == pytest.approx(8.0)


async def test_a_held_run_that_comes_due_while_the_executor_was_frozen_is_handed_back(
    harness: Callable[..., Harness],
) -> None:
    h = harness(concurrency=4)
    h.task(noop)
    held = h.send(make_dispatch(start_in_s=0.05))
    h.ahead_s = 6.0  # its timer fires as a frozen process's would: seconds late
    handed = await h.kept.report_of(held)
    assert handed.outcome is Outcome.NOT_STARTED
    assert handed.error.startswith("handed back: this executor was stalled or frozen for 6 s")
