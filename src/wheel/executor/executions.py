"""Executions: what this executor holds — waiting and running dispatches — and its credit policy.

It is the `StreamHandler` every link reports to. Credit: a welcomed stream
is granted each pool's whole concurrency; a dispatch uses one; when its
execution ends (reported, or dropped as stale) one credit goes back to the
stream it came on, if that stream is still up and we are not draining. So a
stream never has more than `concurrency[pool]` outstanding (unused credit
plus unfinished dispatches). Since every stream holds that much, the pool's
`PoolSlots` queue what exceeds the free concurrency, heartbeated as they wait.

Messages naming an (execution id, fence) act only on that exact pair:
`StaleFence` stops a running or waiting execution without a result and drops
a buffered result; `ResultAccepted` drops a buffered result;
`CancelExecution` stops the handler and reports FAILED `cancelled: <reason>`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.executor.connection import Stream
from wheel.executor.messages import Dispatch, Outcome, Report, cap_error, describe_error
from wheel.executor.outbox import Outbox
from wheel.executor.pools import PoolSlots
from wheel.executor.routing import Router
from wheel.executor.runner import CANCEL_GRACE_S, SHUTDOWN_ERROR, Execution, Stop, utc_now
from wheel.executor.tasks import TaskRegistry
from wheel.executor.threads import HandlerThreads
from wheel.model.ids import ExecutionId

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Held:
    execution: Execution
    origin: Stream
    """The stream the dispatch came on: its credit comes back there."""


class Executions:
    def __init__(
        self,
        registry: TaskRegistry,
        pools: Mapping[str, int],
        *,
        threads: HandlerThreads,
        router: Router,
        outbox: Outbox,
        wall: Callable[[], datetime] = utc_now,
        cancel_grace_s: float = CANCEL_GRACE_S,
    ) -> None:
        self._registry = registry
        self._pools = dict(pools)
        self._slots = {pool: PoolSlots(concurrency) for pool, concurrency in pools.items()}
        self._threads = threads
        self._router = router
        self._outbox = outbox
        self._wall = wall
        self._cancel_grace_s = cancel_grace_s
        self._held: dict[tuple[str, int], _Held] = {}
        self.finished: Counter[str] = Counter()
        """Executions run to a report here, by outcome (for metrics)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.draining = False

    def __len__(self) -> int:
        return len(self._held)

    def phases(self) -> Counter[str]:
        """Held executions by phase (waiting, running, ...)."""
        return Counter(held.execution.phase for held in self._held.values())

    def phase(self, execution_id: str, fence: int) -> str | None:
        """`waiting` or `running` while held; None once it has ended (or was never here)."""
        held = self._held.get((execution_id, fence))
        return held.execution.phase if held else None

    # StreamHandler

    def stream_up(self, stream: Stream) -> None:
        self._router.add(stream)
        if not self.draining:
            for pool, concurrency in self._pools.items():
                stream.grant(pool, concurrency)
        self._outbox.stream_up(stream)

    def stream_down(self, stream: Stream) -> None:
        self._router.remove(stream)
        self._outbox.stream_down(stream)

    def on_dispatch(self, stream: Stream, dispatch: Dispatch) -> None:
        context = {"execution": dispatch.execution_id, "fence": dispatch.fence,
                   "node": stream.node_id, "pool": dispatch.pool}  # fmt: skip
        if not stream.take(dispatch.pool):
            log.warning("executions.dispatch_without_credit", extra=context)
        if dispatch.key in self._held or dispatch.key in self._outbox:
            log.warning("executions.duplicate_dispatch", extra=context)
            self._credit_back(stream, dispatch.pool)
            return
        if self.draining:
            self._report_now(dispatch, stream, Outcome.NOT_STARTED, SHUTDOWN_ERROR)
            return
        slots = self._slots.get(dispatch.pool)
        if slots is None:
            log.warning("executions.unknown_pool", extra=context)
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
        key = dispatch.key
        execution = Execution(
            dispatch,
            task,
            slots=slots,
            threads=self._threads,
            heartbeat=lambda: self._heartbeat_now(key),
            wall=self._wall,
            cancel_grace_s=self._cancel_grace_s,
        )
        self._held[key] = _Held(execution, stream)
        runner = asyncio.create_task(self._run(key), name=f"execution {dispatch.execution_id}")
        self._tasks.add(runner)
        runner.add_done_callback(self._tasks.discard)
        log.debug("executions.accepted", extra=context)

    def on_malformed_dispatch(self, stream: Stream, message: pb.Dispatch, problem: str) -> None:
        log.error(
            "executions.malformed_dispatch",
            extra={"execution": message.execution_id, "fence": message.fence,
                   "node": stream.node_id, "problem": problem},
        )  # fmt: skip
        stream.take(message.pool)
        if message.execution_id:
            report = Report(
                execution_id=ExecutionId(message.execution_id),
                fence=message.fence,
                job_id=None,
                outcome=Outcome.FAILED,
                error=cap_error(f"malformed dispatch: {problem}"),
                started_at=None,
                finished_at=self._wall(),
            )
            self._outbox.add(report, stream)
        self._credit_back(stream, message.pool)

    def on_cancel(self, execution_id: str, fence: int, reason: str) -> None:
        held = self._held.get((execution_id, fence))
        if held is not None:
            log.info("executions.cancel", extra={"execution": execution_id, "fence": fence})
            held.execution.stop(Stop("cancelled", reason or "no reason given"))

    def on_stale_fence(self, execution_id: str, fence: int, current_fence: int) -> None:
        context = {"execution": execution_id, "fence": fence, "current_fence": current_fence}
        held = self._held.get((execution_id, fence))
        if held is not None:
            log.info("executions.stale_fence", extra=context)
            held.execution.stop(Stop("stale"))
        if self._outbox.acknowledge(execution_id, fence):
            log.info("executions.stale_result_dropped", extra=context)

    def on_accepted(self, execution_id: str, fence: int) -> None:
        self._outbox.acknowledge(execution_id, fence)

    def heartbeats_for(self, stream: Stream) -> list[tuple[str, int]]:
        route = self._router.route
        return [key for key, held in self._held.items()
                if route(held.execution.dispatch.job_id, prefer=held.origin) is stream]  # fmt: skip

    # Drain

    async def drain(self, timeout_s: float) -> None:
        """No more credit; NOT_STARTED for what waits; cancel what runs after `timeout_s`."""
        self.draining = True
        for held in self._held.values():
            if held.execution.phase == "waiting":
                held.execution.stop(Stop("shutdown"))
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)
        for held in self._held.values():
            held.execution.stop(Stop("shutdown"))
        if self._tasks:
            await asyncio.wait(set(self._tasks))  # each bounded by the cancel grace

    # Internals

    async def _run(self, key: tuple[str, int]) -> None:
        held = self._held[key]
        execution = held.execution
        try:
            report = await execution.run()
        except Exception as exc:  # a bug here must not leave the execution unreported
            log.exception("executions.runner_failed", extra={"execution": key[0], "fence": key[1]})
            report = Report(
                execution_id=execution.dispatch.execution_id,
                fence=execution.dispatch.fence,
                job_id=execution.dispatch.job_id,
                outcome=Outcome.FAILED,
                error=f"executor error: {describe_error(exc)}",
                started_at=None,
                finished_at=self._wall(),
            )
        finally:
            del self._held[key]
        if report is not None:
            self._outbox.add(report, held.origin)
            self.finished[report.outcome.name.lower()] += 1
            log.debug(
                "executions.finished",
                extra={"execution": key[0], "fence": key[1], "outcome": report.outcome.name},
            )
        else:
            log.info("executions.dropped_stale", extra={"execution": key[0], "fence": key[1]})
        self._credit_back(held.origin, execution.dispatch.pool)

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

    def _credit_back(self, stream: Stream, pool: str) -> None:
        if stream.alive and not self.draining and pool in self._pools:
            stream.grant(pool, 1)

    def _heartbeat_now(self, key: tuple[str, int]) -> None:
        held = self._held.get(key)
        if held is None:
            return
        stream = self._router.route(held.execution.dispatch.job_id, prefer=held.origin)
        if stream is not None:
            stream.send_heartbeat(*key)
