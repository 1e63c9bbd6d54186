"""Executions: what this executor holds — held, ready and running runs — and its credit.

It is the `StreamHandler` every link reports to. Credit: a welcomed stream
is granted, per pool, the pool's concurrency plus `hold` — nodes hand runs
over ahead of their instant, and a held run waits here, costing a little
memory and no slot; a dispatch uses one credit; when its run ends (reported,
or dropped as stale) one credit goes back to the stream it came on, if that
stream is still up and we are not draining. Runs start at their `start_at`
(one timer for the earliest of all), in `start_at` order, as their pool's
slots allow (see `runner`).

Back-pressure, so that no lease has to cover a queue here. A pool that has
been saturated knows its start rate; it is *behind* while what waits in it
(held and ready) is more than it starts in `backlog_s` (or while a slot's
worth of due runs waits for each slot), and it gives no credit back until
it has caught up: nodes claim no further ahead than this executor keeps up
with. A due run that still waits for a slot after `max_ready_wait_s` is
handed back NOT_STARTED, and so is a held run whose stream ends more than
HANDOVER_MARGIN_S before its instant (that node gives it to another
executor at once) or is down when its instant comes, or whose instant came
while this process was frozen (STALLED_S): a held run never starts on a stream
that has ended, nor after its node may have let go of it.

Messages naming an (execution id, fence) act only on that exact pair:
`StaleFence` stops a held or running run without a result and drops a
buffered result; `ResultAccepted` drops a buffered result;
`CancelExecution` stops the handler and reports FAILED `cancelled: <reason>`.

Time: instants are read from `wall`, durations from `clock` (monotonic seconds), and
every timer (the starts', the deadlines', a cancel grace, a drain's timeout) is set on
`alarm` — the running loop's by default, a test's `ManualClock` (with `wall` and `clock`
read from it) so that nothing waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import logging
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from wheel import tracing
from wheel.executor.config import DEFAULT_HOLD
from wheel.executor.connection import Stream
from wheel.executor.context import TaskContext
from wheel.executor.messages import (
    Dispatch,
    MalformedDispatch,
    Outcome,
    Report,
    cap_error,
    describe_error,
)
from wheel.executor.outbox import Outbox
from wheel.executor.routing import Router
from wheel.executor.runner import CANCEL_GRACE_S, SHUTDOWN_ERROR, Run, Stop, consume, utc_now
from wheel.executor.tasks import TaskRegistry
from wheel.executor.threads import HandlerThreads
from wheel.model.ids import ExecutionId
from wheel.timingwheel import Alarm, AlarmHandle, GcGovernor, LoopAlarm

log = logging.getLogger(__name__)

_AsyncHandler = Callable[[TaskContext], Awaitable[object]]

HANDOVER_MARGIN_S = 1.0
"""A held run whose stream ends at least this long before its instant is handed back; the
node does the same on its side, so neither starts what the other may give away (clocks
may differ by less than this)."""
RATE_WINDOW_S = 1.0
_DEADLINES_SLACK = 1024
_LOOP_RESOLUTION_S = 0.001
RunKey = tuple[str, int]
STALLED_S = 5.0
"""A held run that comes due this much later than its instant came due while this process
was frozen or starved: its node may have given it away meanwhile (a node lets an executor
go after 15 s without keepalive answers), so it is handed back, never started."""


@dataclass(slots=True)
class _Pool:
    name: str
    concurrency: int
    hold: int
    """What may wait here beyond the concurrency before the start rate is known."""
    backlog_s: float
    running: int = 0
    held: int = 0
    """Runs waiting for their instant."""
    ready: list[tuple[float, int, Run]] = field(default_factory=list)
    """Runs whose instant has come, waiting for a slot: a heap, earliest start_at first
    (ties in arrival order), whatever order they arrived in."""
    withheld: Counter[Stream] = field(default_factory=Counter)
    """Credit owed to streams, kept back while the pool is behind (see `behind`)."""
    rate: float | None = None
    """Runs started a second while it was saturated (None until it has been)."""
    window_at: float = 0.0
    window_starts: int = 0
    window_saturated: bool = False

    @property
    def waiting(self) -> int:
        return self.held + len(self.ready)

    @property
    def room(self) -> int:
        """What may wait here beyond the concurrency: `hold`, or what it starts in
        `backlog_s` once it knows its rate."""
        if self.rate is None:
            return self.hold
        return min(self.hold, max(self.concurrency, int(self.rate * self.backlog_s)))

    @property
    def behind(self) -> bool:
        """The pool is not keeping up: a slot's worth of due runs wait for each slot, or more
        waits than it starts in `backlog_s`. It then takes nothing more: every run it holds
        past its instant waits under a lease, and a queue it could not start within one
        would run twice."""
        return len(self.ready) >= self.concurrency or self.waiting > self.room

    def started(self, now_s: float) -> None:
        """Count a start toward the rate, which is measured over saturated windows only."""
        self.window_starts += 1
        if now_s - self.window_at >= RATE_WINDOW_S:
            self.close_window(now_s)

    def close_window(self, now_s: float) -> None:
        elapsed = now_s - self.window_at
        if self.window_saturated and elapsed > 0:
            sample = self.window_starts / elapsed
            self.rate = sample if self.rate is None else 0.5 * self.rate + 0.5 * sample
        self.window_at, self.window_starts = now_s, 0
        self.window_saturated = bool(self.ready)


class Executions:
    def __init__(
        self,
        registry: TaskRegistry,
        pools: Mapping[str, int],
        *,
        threads: HandlerThreads,
        router: Router,
        outbox: Outbox,
        hold: int = DEFAULT_HOLD,
        backlog_s: float = 5.0,
        max_ready_wait_s: float = 10.0,
        wall: Callable[[], datetime] = utc_now,
        clock: Callable[[], float] = time.monotonic,
        cancel_grace_s: float = CANCEL_GRACE_S,
        governor: GcGovernor | None = None,
        alarm: Alarm | None = None,
    ) -> None:
        self._registry = registry
        self._alarm = alarm
        self._concurrency = dict(pools)
        self._pools = {
            name: _Pool(name, concurrency, hold, backlog_s) for name, concurrency in pools.items()
        }
        self._hold = hold
        self._max_ready_wait_s = max_ready_wait_s
        self._clock = clock
        self._threads = threads
        self._router = router
        self._outbox = outbox
        self._wall = wall
        self._cancel_grace_s = cancel_grace_s
        self._governor = governor
        """Freezes what is alive every so many runs received, so the cyclic collector never
        walks thousands of held runs (it was a quarter of a spike's CPU); a full
        collection of what was frozen runs once the executor is idle again."""
        self._frozen_since_idle = False
        self._runs: dict[tuple[str, int], Run] = {}
        self._starts: list[tuple[float, int, Run]] = []
        """Held runs by start_at (epoch seconds), earliest first; stale entries skipped."""
        self._order = itertools.count()
        self._timer: AlarmHandle | None = None
        self._timer_at = float("inf")
        self._deadlines: list[tuple[float, int, RunKey]] = []
        """Running runs' deadlines (`clock` time), earliest first; ended runs' entries skipped."""
        self._deadline_timer: AlarmHandle | None = None
        self._deadline_timer_at = float("inf")
        self._idle = asyncio.Event()
        self._idle.set()
        self.finished: Counter[str] = Counter()
        """Runs ended with a report here, by outcome (for metrics)."""
        self.draining = False

    def __len__(self) -> int:
        return len(self._runs)

    def phases(self) -> Counter[str]:
        """Held runs by phase: `waiting` (for their instant or a slot) or `running`."""
        return Counter(
            "running" if run.phase == "running" else "waiting" for run in self._runs.values()
        )

    def phase(self, execution_id: str, fence: int) -> str | None:
        """`waiting` or `running` while held here; None once ended (or never here)."""
        run = self._runs.get((execution_id, fence))
        if run is None:
            return None
        return "running" if run.phase == "running" else "waiting"

    def credit(self, pool: str) -> int:
        """What a stream is granted for a pool: its concurrency plus what may be held."""
        return self._concurrency[pool] + self._hold

    # StreamHandler

    def stream_up(self, stream: Stream) -> None:
        self._router.add(stream)
        if not self.draining:
            for pool in self._concurrency:
                stream.grant(pool, self.credit(pool))
        self._outbox.stream_up(stream)

    def stream_down(self, stream: Stream) -> None:
        self._router.remove(stream)
        self._hand_back_held(stream)
        self._outbox.stream_down(stream)

    def _hand_back_held(self, stream: Stream) -> None:
        """Its node lets go of what it handed over on this stream and has not started: give
        back what is not due within HANDOVER_MARGIN_S (the rest starts here as usual)."""
        after_s = self._wall().timestamp() + HANDOVER_MARGIN_S
        gone = [
            run
            for run in self._runs.values()
            if run.origin is stream
            and run.phase == "held"
            and run.dispatch.start_at.timestamp() > after_s
        ]
        if gone:
            log.info("executions.handed_back", extra={"node": stream.node_id, "runs": len(gone),
                                                      "reason": "stream ended"})  # fmt: skip
        for run in gone:
            self._stop(run, Stop("handed_back", f"its stream to {stream.node_id} ended first"))

    def on_dispatch(self, stream: Stream, dispatch: Dispatch) -> None:
        if not stream.take(dispatch.pool):
            log.warning("executions.dispatch_without_credit", extra=_context(stream, dispatch))
        if dispatch.key in self._runs or dispatch.key in self._outbox:
            log.warning("executions.duplicate_dispatch", extra=_context(stream, dispatch))
            self._credit_back(stream, dispatch.pool)
            return
        if self.draining:
            self._report_now(dispatch, stream, Outcome.NOT_STARTED, SHUTDOWN_ERROR)
            return
        if dispatch.pool not in self._pools:
            log.warning("executions.unknown_pool", extra=_context(stream, dispatch))
            served = ", ".join(sorted(self._pools))
            error = f"pool {dispatch.pool!r} is not served by this executor (it serves {served})"
            self._report_now(dispatch, stream, Outcome.NOT_STARTED, error)
            return
        task = self._registry.get(dispatch.task_type)
        if task is None:
            names = ", ".join(self._registry.names())
            error = f"unknown task type {dispatch.task_type!r}: this executor runs {names}"
            self._report_now(dispatch, stream, Outcome.FAILED, cap_error(error))
            self._credit_back(stream, dispatch.pool)
            return
        run = Run(dispatch, task, stream)
        self._runs[dispatch.key] = run
        self._idle.clear()
        if self._governor is not None and self._governor.note_added(1):
            self._frozen_since_idle = True
        start_s = dispatch.start_at.timestamp()
        if start_s <= self._wall().timestamp():
            self._make_ready(run)
            return
        self._pools[dispatch.pool].held += 1
        heapq.heappush(self._starts, (start_s, next(self._order), run))
        if start_s < self._timer_at:
            self._arm(start_s)

    def on_malformed_dispatch(self, stream: Stream, malformed: MalformedDispatch) -> None:
        log.error(
            "executions.malformed_dispatch",
            extra={"execution": malformed.execution_id, "fence": malformed.fence,
                   "node": stream.node_id, "problem": malformed.problem},
        )  # fmt: skip
        stream.take(malformed.pool)
        if malformed.execution_id:
            report = Report(
                execution_id=ExecutionId(malformed.execution_id),
                fence=malformed.fence,
                job_id=None,
                outcome=Outcome.FAILED,
                error=cap_error(f"malformed dispatch: {malformed.problem}"),
                started_at=None,
                finished_at=self._wall(),
            )
            self._outbox.add(report, stream)
        self._credit_back(stream, malformed.pool)

    def on_cancel(self, execution_id: str, fence: int, reason: str) -> None:
        run = self._runs.get((execution_id, fence))
        if run is not None:
            log.info("executions.cancel", extra={"execution": execution_id, "fence": fence})
            self._stop(run, Stop("cancelled", reason or "no reason given"))

    def on_stale_fence(self, execution_id: str, fence: int, current_fence: int) -> None:
        context = {"execution": execution_id, "fence": fence, "current_fence": current_fence}
        run = self._runs.get((execution_id, fence))
        if run is not None:
            log.info("executions.stale_fence", extra=context)
            self._stop(run, Stop("stale"))
        if self._outbox.acknowledge(execution_id, fence):
            log.info("executions.stale_result_dropped", extra=context)

    def on_accepted(self, execution_id: str, fence: int) -> None:
        self._outbox.acknowledge(execution_id, fence)

    def heartbeats_for(self, stream: Stream) -> list[tuple[str, int]]:
        """Runs whose lease this stream keeps: running, or due and waiting for a slot. A run
        held until its instant needs none: nodes hand runs over well within their lease.
        Asked every heartbeat interval, it also gives back what waited too long for a slot."""
        self._hand_back_overdue()
        route = self._router.route
        return [key for key, run in self._runs.items()
                if run.phase in ("running", "ready")
                and route(run.dispatch.job_id, prefer=run.origin) is stream]  # fmt: skip

    # Drain

    async def drain(self, timeout_s: float) -> None:
        """No more credit; NOT_STARTED for what waits; cancel what runs after `timeout_s`."""
        self.draining = True
        for run in list(self._runs.values()):
            if run.phase in ("held", "ready"):
                self._stop(run, Stop("shutdown"))
        if self._runs:
            await self._idle_within(timeout_s)
        for run in list(self._runs.values()):
            self._stop(run, Stop("shutdown"))
        if self._runs:
            await self._idle.wait()  # each bounded by the cancel grace

    async def _idle_within(self, timeout_s: float) -> None:
        """Wait until nothing is held here, or `timeout_s` on the alarm."""
        if timeout_s <= 0:
            return
        timed_out = asyncio.get_running_loop().create_future()

        def time_out() -> None:
            if not timed_out.done():
                timed_out.set_result(None)

        handle = self._later(timeout_s, time_out)
        idle = asyncio.ensure_future(self._idle.wait())
        try:
            await asyncio.wait({idle, timed_out}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            handle.cancel()
            idle.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await idle

    def _later(self, delay_s: float, callback: Callable[[], None]) -> AlarmHandle:
        """Run `callback` on the alarm no earlier than `delay_s` from now."""
        if self._alarm is None:
            self._alarm = LoopAlarm(asyncio.get_running_loop())
        return self._alarm.call_later(math.ceil(delay_s * 1000), callback)

    # Starting

    def _arm(self, start_s: float) -> None:
        """One timer, for the earliest start of every held run."""
        if self._timer is not None:
            self._timer.cancel()
        delay_s = max(0.0, start_s - self._wall().timestamp())
        self._timer = self._later(delay_s, self._starts_due)
        self._timer_at = start_s

    def _starts_due(self) -> None:
        self._timer, self._timer_at = None, float("inf")
        # A loop timer may fire up to its resolution early: the wall clock decides.
        now_s = self._wall().timestamp()
        starts = self._starts
        handed: Counter[str] = Counter()
        while starts and starts[0][0] <= now_s:
            run = heapq.heappop(starts)[2]
            if run.phase != "held":
                continue
            late_s = now_s - run.dispatch.start_at.timestamp()
            if not run.origin.alive or run.origin.gone_silent():  # its node may have given
                # it away (a frozen process's timers fire before it reads that): not here
                ended = f"its stream to {run.origin.node_id} ended first"
                self._stop(run, Stop("handed_back", ended))
                handed["stream ended"] += 1
            elif late_s > STALLED_S:
                stalled = f"this executor was stalled or frozen for {late_s:.0f} s at its instant"
                self._stop(run, Stop("handed_back", stalled))
                handed["stalled"] += 1
            else:
                self._make_ready(run)
        for reason, count in handed.items():
            log.warning("executions.handed_back", extra={"runs": count, "reason": reason})
        if starts:
            self._arm(starts[0][0])

    def _make_ready(self, run: Run) -> None:
        pool = self._pools[run.dispatch.pool]
        if run.phase == "held":
            pool.held -= 1
        run.phase = "ready"
        if pool.running < pool.concurrency and not pool.ready:
            self._start(run, pool)  # the common case: a free slot, nobody ahead
            return
        pool.window_saturated = True
        start_s = run.dispatch.start_at.timestamp()
        heapq.heappush(pool.ready, (start_s, next(self._order), run))
        self._fill(pool)

    def _fill(self, pool: _Pool) -> None:
        while pool.running < pool.concurrency and pool.ready:
            run = heapq.heappop(pool.ready)[2]
            if run.phase == "ready":
                self._start(run, pool)
        if pool.withheld and not pool.behind:
            # Only what it can take again: a queue's worth of owed credit paid at once
            # would bring the queue straight back.
            room = pool.room - pool.waiting
            owed, pool.withheld = pool.withheld, Counter()
            for stream, count in owed.items():
                paid = max(0, min(count, room))
                room -= paid
                if paid:
                    self._credit_back(stream, pool.name, paid)
                if count > paid:
                    pool.withheld[stream] += count - paid

    def _hand_back_overdue(self) -> None:
        """Give back the due runs that waited `max_ready_wait_s` for a slot and got none."""
        limit_s = self._wall().timestamp() - self._max_ready_wait_s
        for pool in self._pools.values():
            overdue = 0
            while pool.ready and pool.ready[0][0] < limit_s:
                run = heapq.heappop(pool.ready)[2]
                if run.phase == "ready":
                    overdue += 1
                    waited = f"waited {self._max_ready_wait_s:g} s for a slot in pool {pool.name!r}"
                    self._stop(run, Stop("handed_back", waited))
            if overdue:
                log.warning("executions.handed_back", extra={"pool": pool.name, "runs": overdue,
                                                             "reason": "behind"})  # fmt: skip

    def _start(self, run: Run, pool: _Pool) -> None:
        dispatch = run.dispatch
        now = self._wall()
        timeout_s = (dispatch.deadline - now).total_seconds()
        if timeout_s <= 0:
            # Its deadline passed while it waited for a slot: it never started.
            run.stop = Stop("timeout")
            self._end(run, run.stopped_report(now))
            return
        run.phase = "running"
        pool.running += 1
        started_s = self._clock()
        pool.started(started_s)
        loop = asyncio.get_running_loop()
        key = run.key

        def beat() -> None:  # from any thread; the loop may be gone under an abandoned handler
            if not loop.is_closed():
                loop.call_soon_threadsafe(self._heartbeat_now, key)

        span = run.span = tracing.handler_started(
            dispatch.execution_id, dispatch.job_id, dispatch.task_type, dispatch.attempt,
            dispatch.fence, dispatch.traceparent,
        )  # fmt: skip
        context = run.context = TaskContext(
            execution_id=dispatch.execution_id,
            job_id=dispatch.job_id,
            task_type=dispatch.task_type,
            pool=dispatch.pool,
            attempt=dispatch.attempt,
            fence=dispatch.fence,
            scheduled_for=dispatch.scheduled_for,
            payload=dispatch.payload,
            deadline=dispatch.deadline,
            send_heartbeat=beat,
            trace_context=tracing.carrier(span, dispatch.traceparent),
        )
        handler = run.task.handler
        try:
            if run.task.is_async:
                run.started_at = now
                call = cast(_AsyncHandler, handler)
                with tracing.current(span):  # the task copies the context it starts in
                    run.handler = asyncio.ensure_future(call(context))
            else:

                def in_thread() -> object:
                    run.started_at = self._wall()
                    with tracing.current(span):
                        return handler(context)

                run.thread_job = self._threads.submit(in_thread)
                run.handler = asyncio.wrap_future(run.thread_job)
        except Exception as exc:  # the handler could not even be called
            log.exception("executions.start_failed", extra={"execution": key[0]})
            self._end(run, run.report(Outcome.FAILED, f"executor error: {describe_error(exc)}",
                                      self._wall()))  # fmt: skip
            return
        run.handler.add_done_callback(functools.partial(self._handler_done, run))
        run.deadline_at = started_s + timeout_s
        self._watch_deadline(run.deadline_at, key)

    def _watch_deadline(self, due: float, key: RunKey) -> None:
        """Stop the run at `due` (`clock` time) if it still runs: one heap and one timer for
        every run's deadline, not a timer handle each (asyncio orders those with a Python
        `__lt__`: a tenth of a run's cost here). Entries of ended runs are skipped when due,
        and dropped whenever they outnumber the runs held."""
        deadlines = self._deadlines
        if len(deadlines) > 2 * len(self._runs) + _DEADLINES_SLACK:
            runs = self._runs
            deadlines[:] = [entry for entry in deadlines if entry[2] in runs]
            heapq.heapify(deadlines)
        heapq.heappush(deadlines, (due, next(self._order), key))
        if due < self._deadline_timer_at:
            if self._deadline_timer is not None:
                self._deadline_timer.cancel()
            self._deadline_timer = self._later(due - self._clock(), self._deadlines_due)
            self._deadline_timer_at = due

    def _deadlines_due(self) -> None:
        self._deadline_timer, self._deadline_timer_at = None, float("inf")
        now = self._clock() + _LOOP_RESOLUTION_S  # a loop timer may fire that much early
        deadlines, runs = self._deadlines, self._runs
        while deadlines and deadlines[0][0] <= now:
            due, _, key = heapq.heappop(deadlines)
            run = runs.get(key)
            if run is not None and run.phase == "running" and run.deadline_at == due:
                self._stop(run, Stop("timeout"))
        if deadlines:
            at = deadlines[0][0]
            self._deadline_timer = self._later(at - self._clock(), self._deadlines_due)
            self._deadline_timer_at = at

    # Ending

    def _handler_done(self, run: Run, handler: asyncio.Future[object]) -> None:
        if run.phase == "done":  # abandoned after its grace: nobody waits for it
            consume(handler)
            return
        finished_at = self._wall()
        if run.stop is not None:  # stopped while it ran: the stop says what happened
            consume(handler)
            report = run.stopped_report(finished_at)
        else:
            report = run.finished_report(handler, finished_at)
        self._end(run, report)

    def _stop(self, run: Run, stop: Stop) -> None:
        """End a run early (the first reason given wins)."""
        if run.phase == "done" or run.stop is not None:
            return
        run.stop = stop
        if run.phase != "running":
            self._end(run, run.stopped_report(self._wall()))
            return
        assert run.context is not None
        assert run.handler is not None
        run.context.request_cancel()
        if run.thread_job is not None:
            run.thread_job.cancel()  # succeeds only while no thread has picked it up
        else:
            run.handler.cancel()
        if run.timer is not None:
            run.timer.cancel()
        run.timer = self._later(self._cancel_grace_s, functools.partial(self._abandon, run))

    def _abandon(self, run: Run) -> None:
        if run.phase != "running":
            return
        log.warning(
            "runner.handler_abandoned",
            extra={"execution": run.key[0], "fence": run.key[1],
                   "grace_s": self._cancel_grace_s},
        )  # fmt: skip
        self._end(run, run.stopped_report(self._wall()))

    def _end(self, run: Run, report: Report | None) -> None:
        was_running = run.phase == "running"
        pool = self._pools[run.dispatch.pool]
        if run.phase == "held":
            pool.held -= 1
        run.phase = "done"
        if run.timer is not None:
            run.timer.cancel()
            run.timer = None
        self._runs.pop(run.key, None)
        if run.span is not None:
            ended = report.outcome.name.lower() if report is not None else "stale"
            tracing.handler_ended(run.span, ended, report.error if report is not None else "",
                                  error_type=run.error_type(report))  # fmt: skip
            run.span = None
        if report is not None:
            self._outbox.add(report, run.origin)
            self.finished[report.outcome.name.lower()] += 1
        else:
            log.info("executions.dropped_stale", extra={"execution": run.key[0],
                                                        "fence": run.key[1]})  # fmt: skip
        self._credit_back(run.origin, run.dispatch.pool)
        if was_running:
            pool.running -= 1
            self._fill(pool)
        if not self._runs:
            self._idle.set()
            if self._frozen_since_idle:
                self._frozen_since_idle = False
                asyncio.get_running_loop().call_soon(self._collect_if_idle)

    def _collect_if_idle(self) -> None:
        """Cycles that died frozen (a failed handler's traceback) are found now, while
        nothing is held: a full collection of a small heap, once enough was frozen."""
        if not self._runs and self._governor is not None:
            self._governor.collect_frozen_if_grown()

    def _report_now(self, dispatch: Dispatch, stream: Stream, outcome: Outcome, error: str) -> None:
        report = Report(
            execution_id=dispatch.execution_id,
            fence=dispatch.fence,
            job_id=dispatch.job_id,
            outcome=outcome,
            error=error,
            started_at=None,
            finished_at=self._wall(),
        )
        self._outbox.add(report, stream)

    def _credit_back(self, stream: Stream, pool: str, count: int = 1) -> None:
        if not stream.alive or self.draining or pool not in self._pools:
            return
        waiting = self._pools[pool]
        if waiting.behind:
            waiting.withheld[stream] += count  # granted once it catches up (`_fill`)
            return
        stream.grant(pool, count)

    def _heartbeat_now(self, key: tuple[str, int]) -> None:
        run = self._runs.get(key)
        if run is None:
            return
        stream = self._router.route(run.dispatch.job_id, prefer=run.origin)
        if stream is not None:
            stream.send_heartbeat(*key)


def _context(stream: Stream, dispatch: Dispatch) -> dict[str, object]:
    return {"execution": dispatch.execution_id, "fence": dispatch.fence,
            "node": stream.node_id, "pool": dispatch.pool}  # fmt: skip
