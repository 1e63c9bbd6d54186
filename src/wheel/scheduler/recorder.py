"""Results and heartbeats: batched into fenced statements, answered on the link they came on.

Contract:
- A result is recorded only as its sender's: the sender is the link, never a
  field of the message. A run this node handed to another executor process is
  refused at once ("not dispatched to this executor", telling nothing about
  it); for runs this node does not track, the store makes the same check.
- Each (run, fence) appears once per statement, so every answer maps to one
  sender; a second report of it goes in the next batch.
- Recorded attempts are acknowledged (the executor may forget them) and
  handed to `finished`, which files retries and frees overlap queues; stale
  ones are refused with the current fence.
- A heartbeat extends the run's lease in Postgres and its in-flight entry here;
  one the store refuses is answered as stale, so the executor cancels the run.
  Heartbeats go on a connection of their own: they never wait for one behind
  claims and records (under load, a heartbeat late is a lease lapsed and a
  run run twice).
- `behind()` is true while more than a few batches wait: a finished run's
  result that waits past its lease gets the occurrence reaped and run again,
  so the engine claims nothing more until this catches up.
- `reporting()` names the attempts whose result or heartbeat waits here: the
  executor spoke of them, so a lease of theirs that lapsed meanwhile is this
  node's delay (the store away or slow), and the reaper spares them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import defaultdict
from collections.abc import Callable

from wheel import tracing
from wheel.model.executions import AttemptResult, Fenced, Outcome, Recorded
from wheel.model.ids import ExecutionKey
from wheel.scheduler.batcher import Batcher
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.in_flight import LEASE_GRACE_S, InFlightRuns
from wheel.scheduler.links import Link
from wheel.scheduler.observer import EngineObserver, EngineStats
from wheel.scheduler.outgoing import Acknowledgements, Dispatches, Refusal
from wheel.store.occurrences import Occurrences, RecordOutcome
from wheel.timingwheel import Clock

log = logging.getLogger(__name__)

BEHIND_BATCHES = 4
"""`behind()` once more than this many record batches of results wait."""

Report = tuple[Link | None, AttemptResult]
"""A result and the link it came on (None: the node's own, e.g. a dispatch given back)."""


def _trace(
    first: dict[tuple[ExecutionKey, int], Report],
    outcome: RecordOutcome,
    began_ns: int,
    ended_ns: int,
) -> None:
    for recorded in outcome.recorded:
        result = first[(recorded.key, recorded.fence)][1]
        status = recorded.status.value
        tracing.recorded(recorded.key, recorded.fence, result.outcome.value, status, began_ns,
                         ended_ns)  # fmt: skip
    for refused in outcome.stale:
        result = first[(refused.key, refused.fence)][1]
        tracing.recorded(refused.key, refused.fence, result.outcome.value, None, began_ns, ended_ns)


class Recorder:
    def __init__(
        self,
        config: SchedulerConfig,
        occurrences: Occurrences,
        in_flight: InFlightRuns,
        *,
        stats: EngineStats,
        observer: EngineObserver,
        clock: Clock,
        finished: Callable[[Recorded, Outcome | None], None],
        recorded: Callable[[], None],
        heartbeats: Occurrences | None = None,
    ) -> None:
        """`finished` follows every recorded attempt (and every stale one of a run still in
        flight here, with no outcome); `recorded` follows every statement. `heartbeats`, on
        connections of their own, records heartbeats (default: `occurrences`)."""
        self._config = config
        self._occurrences = occurrences
        self._beats = heartbeats or occurrences
        self._in_flight = in_flight
        self._stats = stats
        self._observer = observer
        self._clock = clock
        self._finished = finished
        self._after_batch = recorded
        self._results: Batcher[Report] | None = None
        self._heartbeats: Batcher[tuple[Link, Fenced]] | None = None

    def start(self) -> None:
        batch = self._config.record_batch
        self._results = Batcher("results", self._record, max_batch=batch, concurrency=2)
        self._heartbeats = Batcher("heartbeats", self._heartbeat, max_batch=batch, concurrency=1)

    async def stop(self) -> None:
        """Record what has come in (for up to the drain timeout each), then stop."""
        for batcher in (self._results, self._heartbeats):
            if batcher is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(batcher.flush(), self._config.drain_timeout_s)
                await batcher.close()

    async def flush(self) -> None:
        """Return once every result submitted so far is recorded (or refused)."""
        if self._results is not None:
            await self._results.flush()

    def waiting(self) -> int:
        """Results not yet recorded."""
        return len(self._results) if self._results is not None else 0

    def behind(self) -> bool:
        return self.waiting() > BEHIND_BATCHES * self._config.record_batch

    def reporting(self) -> set[Fenced]:
        """The attempts whose result or heartbeat came in and is not yet recorded."""
        waiting: set[Fenced] = set()
        if self._results is not None:
            results = self._results.pending()
            waiting.update(Fenced(result.key, result.fence) for _, result in results)
        if self._heartbeats is not None:
            waiting.update(fenced for _, fenced in self._heartbeats.pending())
        return waiting

    # -- what comes in ---------------------------------------------------------------------

    def submit(self, link: Link | None, result: AttemptResult) -> None:
        """Record `result` as sent on `link` (None: the node's own report)."""
        if self._results is None:
            raise RuntimeError("the recorder is not started")
        self._results.add((link, result))

    def report(self, link: Link, result: AttemptResult) -> None:
        """A result from an executor's stream: recorded as that executor's, or refused."""
        result = dataclasses.replace(
            result, executor_id=link.executor_id, executor_instance=link.hello.instance_id
        )
        entry = self._in_flight.get(result.key)
        if (
            entry is not None
            and entry.fence == result.fence
            and entry.link is not None
            and entry.link.binding != link.binding
        ):
            self._refuse(link, "result", result.key.id, result.fence, not_yours=True)
            return
        self.submit(link, result)

    def refuse_unreadable(self, link: Link, execution_id: str, fence: int) -> None:
        """A report that cannot be read is refused like a stale one: the sender drops it."""
        log.warning("engine.bad_report", extra={"execution": execution_id[:200]})
        self._refuse(link, "result", execution_id, fence, not_yours=False)

    def heartbeat(self, link: Link, fenced: Fenced) -> None:
        if self._heartbeats is None:
            raise RuntimeError("the recorder is not started")
        self._heartbeats.add((link, fenced))

    def undelivered(self, link: Link) -> list[Fenced]:
        """Dispatches still queued for a stream that ended never reached it: give them back;
        which they were."""
        given: list[Fenced] = []
        while not link.outbox.empty():
            message = link.outbox.get_nowait()
            if not isinstance(message, Dispatches):
                continue
            for fenced in message.fences():
                self._stats.not_started += 1
                self.submit(None, AttemptResult(fenced.key, fenced.fence, Outcome.NOT_STARTED))
                given.append(fenced)
        return given

    def _refuse(
        self, link: Link, kind: str, execution_id: str, fence: int, *, not_yours: bool
    ) -> None:
        reason = "not_yours" if not_yours else "stale"
        self._stats.count_refused(f"{kind}.{reason}")
        self._observer.refused(kind, reason, 1)
        if not_yours:
            log.warning(
                "engine.report_refused",
                extra={"kind": kind, "execution": execution_id[:200], "executor": link.executor_id,
                       "reason": "the run was not dispatched to this executor"},
            )  # fmt: skip
        link.send(Refusal(execution_id, fence, not_yours=not_yours))

    # -- the statements --------------------------------------------------------------------

    async def _record(self, batch: list[Report]) -> None:
        first: dict[tuple[ExecutionKey, int], Report] = {}
        later: list[Report] = []
        for sent_by, result in batch:
            slot = (result.key, result.fence)
            if slot in first:
                later.append((sent_by, result))
            else:
                first[slot] = (sent_by, result)
        began, began_ns = time.perf_counter(), time.time_ns()
        outcome = await self._occurrences.record_results([r for _, r in first.values()])
        took = time.perf_counter() - began
        if tracing.enabled():
            _trace(first, outcome, began_ns, began_ns + int(took * 1e9))
        self._stats.record_batches += 1
        self._stats.record_s += took
        self._observer.recorded(took, len(first))
        accepted: defaultdict[Link, list[Fenced]] = defaultdict(list)
        stale: defaultdict[Link, list[Refusal]] = defaultdict(list)
        for recorded in outcome.recorded:
            link, result = first[(recorded.key, recorded.fence)]
            if link is not None:
                accepted[link].append(Fenced(recorded.key, recorded.fence))
            self._finished(recorded, result.outcome)
        self._stats.recorded += len(outcome.recorded)
        for refused in outcome.stale:
            link = first[(refused.key, refused.fence)][0]
            if refused.not_yours:
                if link is not None:
                    self._refuse(link, "result", refused.key.id, refused.fence, not_yours=True)
                continue
            self._stats.stale += 1
            if link is not None:
                stale[link].append(
                    Refusal(refused.key.id, refused.fence, current_fence=refused.current_fence)
                )
            entry = self._in_flight.get(refused.key)
            if entry is not None and entry.fence == refused.fence:
                self._in_flight.done(refused.key)
        for link in accepted.keys() | stale.keys():
            link.send(Acknowledgements(tuple(accepted.get(link, ())), tuple(stale.get(link, ()))))
        for again in later:
            self.submit(*again)
        self._after_batch()

    async def _heartbeat(self, batch: list[tuple[Link, Fenced]]) -> None:
        by_link: defaultdict[Link, list[Fenced]] = defaultdict(list)
        for link, item in batch:
            by_link[link].append(item)
        lease_s = self._config.lease_s
        expires = self._clock.monotonic_ms() / 1000 + lease_s + LEASE_GRACE_S
        for link, items in by_link.items():
            refused = await self._beats.heartbeat(items, executor=link.binding, lease_s=lease_s)
            refused_set = {(r.key, r.fence) for r in refused}
            for item in items:
                entry = self._in_flight.get(item.key)
                if entry is not None and (item.key, item.fence) not in refused_set:
                    entry.expires_monotonic_s = expires
            if refused:
                self._stats.count_refused("heartbeat.refused", len(refused))
                self._observer.refused("heartbeat", "refused", len(refused))
                link.send(
                    Acknowledgements(stale=tuple(Refusal(r.key.id, r.fence) for r in refused))
                )
