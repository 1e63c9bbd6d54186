"""Execution: one dispatch on this executor, from waiting for its instant to its report.

The life of one: *waiting* until `start_at` (wall clock; a dispatch may
arrive early, a handler never starts early) and then for a slot of its pool;
*running* the handler with a timeout at `deadline`; then a `Report`, or None
when the scheduler said the fence is stale (nobody would accept it).

`stop(Stop)` ends it early from the event loop: while waiting, a shutdown
answers NOT_STARTED and a cancel request FAILED; while running, the handler
is cancelled (async: `task.cancel()`; sync: `ctx.cancel_event` is set, since
a thread cannot be interrupted) and given CANCEL_GRACE_S to finish before it
is abandoned, so a handler that ignores cancellation never holds the report.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, cast

from wheel.executor.context import TaskContext
from wheel.executor.messages import Dispatch, Outcome, Report, describe_error
from wheel.executor.pools import PoolSlots
from wheel.executor.tasks import Task
from wheel.executor.threads import HandlerThreads

log = logging.getLogger(__name__)

CANCEL_GRACE_S = 2.0
SHUTDOWN_ERROR = "executor shutting down"


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Stop:
    """Why an execution ends early."""

    kind: Literal["stale", "cancelled", "shutdown", "timeout"]
    reason: str = ""

    def error(self, deadline: datetime) -> str:
        if self.kind == "cancelled":
            return f"cancelled: {self.reason}"
        if self.kind == "timeout":
            return f"timeout: the handler ran past its deadline {deadline.isoformat()}"
        return SHUTDOWN_ERROR


Phase = Literal["waiting", "running", "done"]


class Execution:
    def __init__(
        self,
        dispatch: Dispatch,
        task: Task,
        *,
        slots: PoolSlots,
        threads: HandlerThreads,
        heartbeat: Callable[[], None],
        wall: Callable[[], datetime] = utc_now,
        cancel_grace_s: float = CANCEL_GRACE_S,
    ) -> None:
        loop = asyncio.get_running_loop()
        self.dispatch = dispatch
        self.task = task
        self.phase: Phase = "waiting"
        self._slots = slots
        self._threads = threads
        self._wall = wall
        self._cancel_grace_s = cancel_grace_s
        self._stop: asyncio.Future[Stop] = loop.create_future()
        self._thread_future: Future[object] | None = None
        self._started_at: datetime | None = None

        def beat() -> None:  # from any thread; the loop may be gone under an abandoned handler
            if not loop.is_closed():
                loop.call_soon_threadsafe(heartbeat)

        self.context = TaskContext(
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
        )

    def stop(self, stop: Stop) -> None:
        """End the execution early (the first reason given wins)."""
        if not self._stop.done():
            self._stop.set_result(stop)

    async def run(self) -> Report | None:
        try:
            if not await self._wait_turn():
                return self._stopped(self._stop.result())
            try:
                return await self._run_handler()
            finally:
                self._slots.release()
        finally:
            self.phase = "done"

    async def _wait_turn(self) -> bool:
        """Wait for start_at, then a slot; False (holding no slot) when stopped first."""
        turn = asyncio.ensure_future(self._start_at_then_slot())
        proceed = False
        waits: set[asyncio.Future[Any]] = {turn, self._stop}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            proceed = not self._stop.done()  # a stop wins even when the turn came with it
        finally:
            if not turn.done():
                turn.cancel()
                await asyncio.wait({turn})
            if not turn.cancelled():
                turn.result()  # raises what went wrong
                if not proceed:
                    self._slots.release()
        return proceed

    async def _start_at_then_slot(self) -> None:
        start_at = self.dispatch.start_at
        # asyncio may wake a timer up to its clock resolution early: re-check the wall clock.
        remaining_s = (start_at - self._wall()).total_seconds()
        while remaining_s > 0:
            await asyncio.sleep(remaining_s)
            remaining_s = (start_at - self._wall()).total_seconds()
        await self._slots.acquire(start_at)

    async def _run_handler(self) -> Report | None:
        self.phase = "running"
        deadline = self.dispatch.deadline
        timeout_s = (deadline - self._wall()).total_seconds()
        if timeout_s <= 0:
            # Its deadline passed while it waited for a slot: it never started, and
            # an attempt that never started is given back (never counted as a failure).
            return self._report(Outcome.NOT_STARTED, Stop("timeout").error(deadline))
        handler = self._start_handler()
        waits: set[asyncio.Future[Any]] = {handler, self._stop}
        try:
            await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            handler.cancel()
            self.context.cancel_event.set()
            raise
        stop = self._stop.result() if self._stop.done() else None
        if handler.done() and (stop is None or stop.kind != "stale"):
            return self._finished(handler)
        await self._cancel_handler(handler)
        return self._stopped(stop or Stop("timeout"))

    def _start_handler(self) -> asyncio.Future[object]:
        handler = self.task.handler
        if self.task.is_async:
            self._started_at = self._wall()
            call = cast(Callable[[TaskContext], Awaitable[object]], handler)
            return asyncio.ensure_future(call(self.context))

        def in_thread() -> object:
            self._started_at = self._wall()
            return handler(self.context)

        self._thread_future = self._threads.submit(in_thread)
        return asyncio.wrap_future(self._thread_future)

    async def _cancel_handler(self, handler: asyncio.Future[object]) -> None:
        self.context.cancel_event.set()
        if self._thread_future is not None:
            self._thread_future.cancel()  # succeeds only while no thread has picked it up
        else:
            handler.cancel()
        await asyncio.wait({handler}, timeout=self._cancel_grace_s)
        if not handler.done():
            log.warning(
                "runner.handler_abandoned",
                extra={"execution": self.dispatch.execution_id, "fence": self.dispatch.fence,
                       "grace_s": self._cancel_grace_s},
            )  # fmt: skip
        handler.add_done_callback(_consume)

    def _finished(self, handler: asyncio.Future[object]) -> Report:
        if handler.cancelled():
            return self._report(Outcome.FAILED, "cancelled: the handler was cancelled")
        exc = handler.exception()
        if exc is not None:
            return self._report(Outcome.FAILED, describe_error(exc))
        return self._report(Outcome.SUCCEEDED, "")

    def _stopped(self, stop: Stop) -> Report | None:
        if stop.kind == "stale":
            return None
        if stop.kind == "shutdown" and self._started_at is None:
            return self._report(Outcome.NOT_STARTED, SHUTDOWN_ERROR)
        return self._report(Outcome.FAILED, stop.error(self.dispatch.deadline))

    def _report(self, outcome: Outcome, error: str) -> Report:
        return Report(
            execution_id=self.dispatch.execution_id,
            fence=self.dispatch.fence,
            job_id=self.dispatch.job_id,
            outcome=outcome,
            error=error,
            started_at=self._started_at,
            finished_at=self._wall(),
        )


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned or cancelled handler's outcome so asyncio does not report it."""
    if not future.cancelled():
        future.exception()
