"""Run: one dispatch on this executor, from held to reported — state, not a task per run.

The life of one: *held* until its `start_at` (a dispatch may arrive early: the
nodes hand runs over ahead of their instant; a handler never starts early),
*ready* until its pool has a free slot, *running* the handler until it
returns, raises or passes its `deadline`, then a `Report` — or none when the
scheduler said the fence is stale (nobody would accept it). `Executions`
drives every run: one timer for the earliest start of all held runs, a queue
of ready runs per pool, and for a running one its handler's own completion
callback and its place in one heap of deadlines (one timer for all). Nothing
per run awaits anything, so a run costs its state, the handler's task (async)
or thread job (sync), and a heap entry.

`Stop` ends a run early: while held or ready, a shutdown answers NOT_STARTED,
a cancel request FAILED, a passed deadline NOT_STARTED (it never started,
and an attempt that never started is given back), and so does a hand-back (its
stream ended before its instant, or it waited too long for a slot); while
running, the handler
is cancelled (async: `task.cancel()`; sync: `ctx.cancel_event` is set, since
a thread cannot be interrupted) and given CANCEL_GRACE_S to finish before it
is abandoned, so a handler that ignores cancellation never holds the report.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from wheel.errors import type_name
from wheel.executor.connection import Stream
from wheel.executor.context import TaskContext
from wheel.executor.messages import Dispatch, Outcome, Report, describe_error
from wheel.executor.tasks import Task
from wheel.timingwheel import AlarmHandle

CANCEL_GRACE_S = 2.0
SHUTDOWN_ERROR = "executor shutting down"


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Stop:
    """Why a run ends early."""

    kind: Literal["stale", "cancelled", "shutdown", "timeout", "handed_back"]
    reason: str = ""

    def error(self, deadline: datetime) -> str:
        if self.kind == "cancelled":
            return f"cancelled: {self.reason}"
        if self.kind == "handed_back":
            return f"handed back: {self.reason}"
        if self.kind == "timeout":
            return f"timeout: the handler ran past its deadline {deadline.isoformat()}"
        return SHUTDOWN_ERROR


Phase = Literal["held", "ready", "running", "done"]


@dataclass(slots=True, eq=False)
class Run:
    """One held dispatch and what it needs while it runs."""

    dispatch: Dispatch
    task: Task
    origin: Stream
    """The stream the dispatch came on: its credit comes back there."""
    phase: Phase = "held"
    stop: Stop | None = None
    """The first reason given to end it early, if any."""
    started_at: datetime | None = None
    context: TaskContext | None = None
    """Made when it starts (a held run needs none)."""
    handler: asyncio.Future[object] | None = None
    """The running handler: its task (async) or its thread job, wrapped."""
    thread_job: Future[object] | None = None
    timer: AlarmHandle | None = None
    """Its cancel grace once stopped."""
    deadline_at: float = 0.0
    """While running: when its deadline passes, on the monotonic clock `Executions` reads."""
    span: Any = None
    """Its `wheel.handler` span while it runs, when the executor traces (wheel.tracing)."""

    @property
    def key(self) -> tuple[str, int]:
        return self.dispatch.key

    def report(self, outcome: Outcome, error: str, finished_at: datetime) -> Report:
        return Report(
            execution_id=self.dispatch.execution_id,
            fence=self.dispatch.fence,
            job_id=self.dispatch.job_id,
            outcome=outcome,
            error=error,
            started_at=self.started_at,
            finished_at=finished_at,
        )

    def stopped_report(self, finished_at: datetime) -> Report | None:
        """What a run stopped early reports (None: stale, nobody would take it)."""
        stop = self.stop
        assert stop is not None
        if stop.kind == "stale":
            return None
        if self.started_at is None and stop.kind in ("shutdown", "timeout", "handed_back"):
            error = stop.error(self.dispatch.deadline)
            return self.report(Outcome.NOT_STARTED, error, finished_at)
        return self.report(Outcome.FAILED, stop.error(self.dispatch.deadline), finished_at)

    def error_type(self, report: Report | None) -> str | None:
        """What its span's `error.type` says: the class of the exception its handler raised,
        the stop that ended it, `stale`, or its outcome (None when it succeeded)."""
        if report is None:
            return "stale"
        if report.outcome is Outcome.SUCCEEDED:
            return None
        if self.stop is not None:
            return self.stop.kind
        handler = self.handler
        if handler is not None and handler.done() and not handler.cancelled():
            exc = handler.exception()
            if exc is not None:
                return type_name(exc)
        return report.outcome.name.lower()

    def finished_report(self, handler: asyncio.Future[object], finished_at: datetime) -> Report:
        """What a handler that returned (or raised) reports."""
        if handler.cancelled():
            return self.report(Outcome.FAILED, "cancelled: the handler was cancelled", finished_at)
        exc = handler.exception()
        if exc is not None:
            return self.report(Outcome.FAILED, describe_error(exc), finished_at)
        return self.report(Outcome.SUCCEEDED, "", finished_at)


def consume(future: asyncio.Future[object]) -> None:
    """Retrieve an abandoned or cancelled handler's outcome so asyncio does not report it."""
    if not future.cancelled():
        future.exception()
