"""Fire, claim, dispatch, record: the work of one node over the partitions it owns.

The timing wheel holds the loaded occurrences of owned partitions and fires
each `lead_ms` before its instant. A fired occurrence waits in the ready
queues (fair across tenants, priority first) until executors have credit for
its pool; then it is claimed in a batch — one statement, fenced by the
partition epochs — and dispatched down a stream with `start_at` = its
instant, so the database round trip happens before the instant, not after.
Results and heartbeats come back on the streams and are recorded in
batches, fence-checked; the store applies the retry rule. The reaper turns
expired leases into failed attempts under the same rule.

The wheel is a cache: anything dropped here (a partition handed over, a
claim that failed) is still pending in Postgres and is loaded again by
whoever owns it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.errors import WheelError
from wheel.model.executions import (
    AttemptResult,
    Claimed,
    ClaimState,
    DueOccurrence,
    ExecutionStatus,
    Fenced,
    Outcome,
    Recorded,
)
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.scheduler.batcher import Batcher
from wheel.scheduler.breaker import Breakers, BreakerState
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.links import Link, Links
from wheel.scheduler.ready import Ready, ReadyQueues
from wheel.store import Store
from wheel.timestamps import to_datetime, to_timestamp
from wheel.timingwheel import FiredBatch, WheelDriver

if TYPE_CHECKING:
    from wheel.scheduler.metrics import NodeMetrics

log = logging.getLogger(__name__)

_OUTCOMES = {
    pb.Result.OUTCOME_SUCCEEDED: Outcome.SUCCEEDED,
    pb.Result.OUTCOME_FAILED: Outcome.FAILED,
    pb.Result.OUTCOME_NOT_STARTED: Outcome.NOT_STARTED,
}
_ADD_CHUNK = 10_000
_RETRY_CLAIM_S = 0.2
_MAX_ERROR_CHARS = 8192
_FINAL = (ExecutionStatus.SUCCEEDED, ExecutionStatus.DEAD, ExecutionStatus.NEEDS_REVIEW)
_NOT_STARTED_BACKOFF_MS = 1000


def _ms(instant: datetime) -> int:
    return int(instant.timestamp() * 1000)


@dataclass(slots=True, eq=False)
class InFlight:
    """An occurrence this node claimed and has not yet seen finish."""

    ready: Ready
    fence: int
    link: Link | None
    expires: float
    """Monotonic: forget it after this (its lease ran out and someone else dealt with it)."""


@dataclass(slots=True)
class EngineStats:
    loaded: int = 0
    claimed: int = 0
    dispatched: int = 0
    recorded: int = 0
    stale: int = 0
    reaped: int = 0
    skipped_overlap: int = 0
    not_started: int = 0
    claim_batches: int = 0
    record_batches: int = 0


class Engine:
    """The owned partitions' occurrences, from the wheel to a recorded result."""

    def __init__(self, config: SchedulerConfig, store: Store, links: Links) -> None:
        self.config = config
        self._store = store
        self.links = links
        self.owned: dict[PartitionId, int] = {}
        """Partitions owned now, with their epochs."""
        self.driver: WheelDriver[ExecutionKey] = WheelDriver(self._fired)
        self.ready = ReadyQueues()
        self.known: dict[ExecutionKey, Ready] = {}
        """Loaded and not yet claimed: in the wheel, waiting, parked, blocked or being claimed."""
        self._by_partition: defaultdict[PartitionId, set[ExecutionKey]] = defaultdict(set)
        self.in_flight: dict[ExecutionKey, InFlight] = {}
        self.tenant_in_flight: Counter[TenantId] = Counter()
        self._reserved: Counter[str] = Counter()
        self._tenant_reserved: Counter[TenantId] = Counter()
        self.parked: defaultdict[str, list[Ready]] = defaultdict(list)
        """By task type: occurrences held back while its circuit breaker is open."""
        self.blocked: dict[JobId, list[Ready]] = {}
        """Occurrences waiting for a job's running one to finish: one under overlap 'queue',
        every one for manual and backfilled runs ('wait'), in the order they were blocked."""
        self.breakers = Breakers(
            threshold=config.breaker_failures,
            cooldown_s=config.breaker_cooldown_s,
            probe_timeout_s=config.lease_s + config.breaker_cooldown_s,
        )
        self.stats = EngineStats()
        self._wake = asyncio.Event()
        self._claims_running = 0
        self._spread_next_ms = 0.0
        self._exclusive_claiming: set[JobId] = set()
        """Jobs (overlap not 'allow') with an occurrence in a claim now: one at a time."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._dispatcher: asyncio.Task[None] | None = None
        self._results: Batcher[tuple[Link | None, AttemptResult]] | None = None
        self._heartbeats: Batcher[tuple[Link, Fenced]] | None = None
        self.metrics: NodeMetrics | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self.driver.start()
        self._results = Batcher(
            "results", self._record, max_batch=self.config.record_batch, concurrency=2
        )
        self._heartbeats = Batcher(
            "heartbeats", self._heartbeat, max_batch=self.config.record_batch, concurrency=1
        )
        self._dispatcher = asyncio.create_task(self._dispatch_loop(), name="dispatcher")

    async def stop(self) -> None:
        """Stop claiming; record what has come in; leave the rest pending in Postgres."""
        self.driver.close()
        if self._dispatcher is not None:
            self._dispatcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._dispatcher
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for batcher in (self._results, self._heartbeats):
            if batcher is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(batcher.flush(), self.config.drain_timeout_s)
                await batcher.close()

    # -- partitions ------------------------------------------------------------------------

    def own(self, partition: PartitionId, epoch: int) -> None:
        self.owned[partition] = epoch

    def release(self, partition: PartitionId) -> None:
        """Stop firing a partition: drop its timers and waiting occurrences (still pending)."""
        self.owned.pop(partition, None)
        for key in self._by_partition.pop(partition, set()):
            self.known.pop(key, None)
            self.driver.cancel(key)
        self.ready.drop_partition(partition)
        for task_type, items in list(self.parked.items()):
            kept = [r for r in items if r.partition != partition]
            if kept:
                self.parked[task_type] = kept
            else:
                del self.parked[task_type]
        for job_id, items in list(self.blocked.items()):
            if items[0].partition == partition:  # a job's runs share its partition
                del self.blocked[job_id]

    # -- loading ---------------------------------------------------------------------------

    def add_due(self, due: Sequence[DueOccurrence], *, spread_per_s: int | None = None) -> int:
        """File loaded occurrences in the wheel (those already known or running are left).

        With `spread_per_s`, overdue ones are released no faster than that
        (catch-up after an outage must not become a second outage).
        """
        claim_at = self.claim_at
        now_ms = int(time.time() * 1000)
        entries: list[tuple[ExecutionKey, int]] = []
        heads: set[JobId] = set()
        for occurrence in due:
            key = occurrence.key
            if occurrence.partition not in self.owned or key in self.known:
                continue
            if key in self.in_flight:
                continue
            fire_at_ms = _ms(occurrence.fire_at)
            ready = Ready(
                key, occurrence.partition, occurrence.tenant_id, occurrence.pool,
                occurrence.task_type, occurrence.priority, occurrence.overlap, fire_at_ms,
            )  # fmt: skip
            self.known[key] = ready
            self._by_partition[occurrence.partition].add(key)
            if occurrence.overlap == "wait":
                # Runs that wait for each other (a backfill, manual runs): one goes
                # to the wheel, the others straight behind it, so the ready queues
                # never hold thousands of one job's runs that only one can take.
                waiting = self.blocked.get(key.job_id)
                if waiting is not None or key.job_id in heads:
                    self.blocked.setdefault(key.job_id, []).append(ready)
                    continue
                heads.add(key.job_id)
            deadline = claim_at(fire_at_ms)
            if spread_per_s and deadline < now_ms:
                # One release schedule for every catch-up, however many pages or partitions.
                self._spread_next_ms = max(self._spread_next_ms, now_ms)
                deadline = int(self._spread_next_ms)
                self._spread_next_ms += 1000 / spread_per_s
            entries.append((key, deadline))
        for first in range(0, len(entries), _ADD_CHUNK):
            self.driver.add_many(entries[first : first + _ADD_CHUNK])
        self.stats.loaded += len(entries)
        return len(entries)

    def claim_at(self, fire_at_ms: int) -> int:
        """When the wheel hands an occurrence over for claiming: `lead_ms` ahead, in slices.

        Occurrences are released a slice (`claim_slice_ms`) at a time, so one
        claim statement takes everything due in a slice instead of the two or
        three a millisecond brings; the executor still starts each at its instant.
        """
        slice_ms = self.config.claim_slice_ms
        return (fire_at_ms - self.config.lead_ms) // slice_ms * slice_ms

    def _forget(self, key: ExecutionKey) -> Ready | None:
        ready = self.known.pop(key, None)
        if ready is not None:
            keys = self._by_partition.get(ready.partition)
            if keys is not None:
                keys.discard(key)
        return ready

    # -- firing and claiming ---------------------------------------------------------------

    def _fired(self, batch: FiredBatch[ExecutionKey]) -> None:
        """The wheel's sink: due occurrences join the ready queues (no I/O here)."""
        known, push = self.known, self.ready.push
        for key, _ in batch.entries:
            ready = known.get(key)
            if ready is not None:
                push(ready)
        self._wake.set()

    async def _dispatch_loop(self) -> None:
        changed = self.links.changed
        while True:
            try:
                self._next_round()
            except Exception:  # a bug here must not stop every dispatch of this node
                log.exception("engine.round_failed")
            waits = [
                asyncio.ensure_future(self._wake.wait()),
                asyncio.ensure_future(changed.wait()),
            ]
            timeout = self._breaker_timeout()
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            for waiter in waits:
                waiter.cancel()
            self._wake.clear()
            changed.clear()
            try:
                self._unpark()
            except Exception:
                log.exception("engine.unpark_failed")

    def _breaker_timeout(self) -> float | None:
        next_change = self.breakers.next_change()
        if next_change is None:
            return None
        return max(0.0, next_change - time.monotonic())

    def _unpark(self) -> None:
        """Parked occurrences flow again when their breaker closes; one goes as its probe."""
        now = time.monotonic()
        for task_type in list(self.parked):
            items = self.parked[task_type]
            if self.breakers.state(task_type) is BreakerState.CLOSED:
                del self.parked[task_type]
                for item in items:
                    self.ready.push(item)
            elif items and self.breakers.probe_due(task_type, now):
                self.ready.push(items.pop(0))  # `allow` in the next round lets it through
                if not items:
                    del self.parked[task_type]

    def _next_round(self) -> None:
        """Start claims for every pool with both waiting work and executor credit."""
        config = self.config
        cap = config.tenant_in_flight_cap

        def room(tenant: TenantId) -> int:
            return cap - self.tenant_in_flight[tenant] - self._tenant_reserved[tenant]

        now = time.monotonic()
        for pool in self.ready.pools():
            while self._claims_running < config.claim_concurrency:
                free = self.links.credit(pool) - self._reserved[pool]
                if free <= 0 or not self.owned:
                    break
                taken = self.ready.take(
                    pool, min(free, config.claim_batch), room, busy=self._exclusive_claiming
                )
                if not taken:
                    break
                batch = []
                for item in taken:
                    if self.breakers.allow(item.task_type, now):
                        batch.append(item)
                    else:
                        self.parked[item.task_type].append(item)
                if not batch:
                    continue
                self._reserved[pool] += len(batch)
                for item in batch:
                    self._tenant_reserved[item.tenant] += 1
                    if item.overlap != "allow":
                        self._exclusive_claiming.add(item.key.job_id)
                self._claims_running += 1
                self._spawn(self._claim(pool, batch))

    def _spawn(self, coroutine: object) -> None:
        task = asyncio.ensure_future(coroutine)  # type: ignore[call-overload]
        self._tasks.add(task)
        task.add_done_callback(self._reap_task)

    def _reap_task(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("engine.task_failed", exc_info=task.exception())

    def pressure(self) -> dict[str, object]:
        """What the dispatcher sees: credit, reservations and claims in flight, per pool."""
        pools = set(self.ready.pools()) | set(self._reserved)
        return {
            "credit": {pool: self.links.credit(pool) for pool in sorted(pools)},
            "reserved": dict(self._reserved),
            "claims_running": self._claims_running,
            "parked": sum(len(items) for items in self.parked.values()),
            "blocked": sum(len(items) for items in self.blocked.values()),
        }

    async def _claim(self, pool: str, batch: list[Ready]) -> None:
        config = self.config
        began = time.perf_counter()
        try:
            outcome = await self._store.occurrences.claim_batch(
                [item.key for item in batch],
                dict(self.owned),
                lease_s=config.lease_s,
                ahead_s=config.lead_ms / 1000 + 1.0,
            )
        except WheelError as exc:
            log.warning("engine.claim_failed", extra={"size": len(batch), "error": str(exc)})
            await asyncio.sleep(_RETRY_CLAIM_S)
            for item in batch:
                if item.key in self.known:
                    self.ready.push(item)
            return
        finally:
            self._reserved[pool] -= len(batch)
            for item in batch:
                self._tenant_reserved[item.tenant] -= 1
                self._exclusive_claiming.discard(item.key.job_id)
            self._claims_running -= 1
            self._wake.set()
        self.stats.claim_batches += 1
        if self.metrics is not None:
            self.metrics.claim_seconds.observe(time.perf_counter() - began)
            self.metrics.claim_size.observe(len(batch))
        by_key = {item.key: item for item in batch}
        outgoing: defaultdict[Link, list[pb.Dispatch]] = defaultdict(list)
        now, expires = datetime.now(UTC), time.monotonic() + config.lease_s + 5
        for claimed in outcome.claimed:
            self._dispatch(claimed, by_key[claimed.key], outgoing, now, expires)
        for link, dispatches in outgoing.items():
            if len(dispatches) == 1:
                link.send(pb.SchedulerMessage(dispatch=dispatches[0]))
            else:
                link.send(pb.SchedulerMessage(dispatches=pb.Dispatches(dispatches=dispatches)))
        overlapped: list[Ready] = []
        for unclaimed in outcome.unclaimed:
            item = by_key[unclaimed.key]
            if unclaimed.state is ClaimState.EARLY:
                item.fire_at_ms = _ms(unclaimed.fire_at)
                self.driver.add(item.key, self.claim_at(item.fire_at_ms))
            elif unclaimed.state is ClaimState.BLOCKED:
                if not self._queue_behind(item):
                    overlapped.append(item)
            else:
                self.stats.skipped_overlap += 1
                self._forget(item.key)
        answered = {c.key for c in outcome.claimed} | {u.key for u in outcome.unclaimed}
        for item in batch:
            if item.key not in answered:
                self._forget(item.key)  # not claimable: paused, edited, or not ours any more
        if overlapped:
            self.stats.skipped_overlap += len(overlapped)
            try:
                await self._store.occurrences.skip(
                    [item.key for item in overlapped],
                    "overlap: one run was already queued behind a running one (policy queue)",
                )
            except WheelError as exc:  # still pending: the catch-up scan brings them back
                log.warning("engine.skip_failed", extra={"error": str(exc)})

    def _queue_behind(self, item: Ready) -> bool:
        """Wait behind the job's running occurrence; False for one the policy skips.

        Overlap 'queue' keeps one waiting and skips the rest; a manual or
        backfilled run ('wait') always waits.
        """
        waiting = self.blocked.setdefault(item.key.job_id, [])
        if any(w.key == item.key for w in waiting):
            return True
        if item.overlap == "wait":
            # It was first in line (released, or the one put in the wheel): it stays
            # first, so runs that wait keep their order however often they are retried.
            waiting.insert(0, item)
            return True
        if not waiting:
            waiting.append(item)
            return True
        self._forget(item.key)
        return False

    def release_blocked(self, job_id: JobId) -> None:
        """The job's running occurrence finished: the first waiting one may go."""
        waiting = self.blocked.get(job_id)
        if not waiting:
            self.blocked.pop(job_id, None)
            return
        item = waiting.pop(0)
        if not waiting:
            del self.blocked[job_id]
        if item.key in self.known:
            self.ready.push(item)
            self._wake.set()

    def retry_blocked(self) -> None:
        """Try every queued occurrence again (its predecessor may have finished elsewhere)."""
        for job_id in list(self.blocked):
            self.release_blocked(job_id)

    def _dispatch(
        self,
        claimed: Claimed,
        item: Ready,
        outgoing: dict[Link, list[pb.Dispatch]],
        now: datetime,
        expires: float,
    ) -> None:
        key = item.key  # the loaded key: its id is already made
        self._forget(key)
        # The job may have been edited since it was loaded: route by what was claimed.
        item.pool, item.task_type, item.priority = claimed.pool, claimed.task_type, claimed.priority
        link = self.links.take(claimed.pool, claimed.task_type)
        entry = InFlight(item, claimed.fence, link, expires)
        self.in_flight[key] = entry
        self.tenant_in_flight[item.tenant] += 1
        self.stats.claimed += 1
        if link is None:
            # The executor went away between credit and claim: give the attempt back.
            self.stats.not_started += 1
            self.submit_result(None, AttemptResult(key, claimed.fence, Outcome.NOT_STARTED))
            return
        start_at = claimed.fire_at
        deadline = max(start_at, now) + timedelta(seconds=claimed.timeout_s)
        if self.metrics is not None:
            self.metrics.lateness.observe(max(0.0, (now - start_at).total_seconds()))
        outgoing[link].append(
            pb.Dispatch(
                execution_id=key.id,
                job_id=str(key.job_id),
                task_type=claimed.task_type,
                pool=claimed.pool,
                payload=claimed.payload,
                attempt=claimed.attempt,
                fence=claimed.fence,
                scheduled_for=to_timestamp(key.scheduled_for),
                start_at=to_timestamp(start_at),
                deadline=to_timestamp(deadline),
                lease_until=to_timestamp(claimed.lease_until),
            )
        )
        self.stats.dispatched += 1

    # -- results, heartbeats, reaping ------------------------------------------------------

    def undelivered(self, link: Link) -> None:
        """Dispatches still queued for a stream that ended never reached it: give them back."""
        while not link.outbox.empty():
            message = link.outbox.get_nowait()
            if message is None:
                continue
            body = message.WhichOneof("body")
            dispatches = [message.dispatch] if body == "dispatch" else []
            if body == "dispatches":
                dispatches = list(message.dispatches.dispatches)
            for dispatch in dispatches:
                key = ExecutionKey.parse(dispatch.execution_id)
                self.stats.not_started += 1
                self.submit_result(None, AttemptResult(key, dispatch.fence, Outcome.NOT_STARTED))

    def submit_result(self, link: Link | None, result: AttemptResult) -> None:
        assert self._results is not None
        self._results.add((link, result))

    def result_from(self, link: Link, message: pb.Result) -> None:
        outcome = _OUTCOMES.get(message.outcome)
        try:
            key = ExecutionKey.parse(message.execution_id)
        except ValueError:
            key = None
        if key is None or outcome is None:
            # Refused like a stale one, so the executor stops sending it again.
            log.warning(
                "engine.bad_result",
                extra={"execution": message.execution_id[:200], "outcome": message.outcome},
            )
            link.send(
                pb.SchedulerMessage(
                    stale_fence=pb.StaleFence(
                        execution_id=message.execution_id, fence=message.fence, current_fence=0
                    )
                )
            )
            return
        self.submit_result(
            link,
            AttemptResult(
                key,
                message.fence,
                outcome,
                executor_id=link.executor_id,
                started_at=to_datetime(message.started_at)
                if message.HasField("started_at")
                else None,
                finished_at=to_datetime(message.finished_at)
                if message.HasField("finished_at")
                else None,
                error=_clean_error(message.error),
            ),
        )

    def results_from(self, link: Link, message: pb.Results) -> None:
        for result in message.results:
            self.result_from(link, result)

    def heartbeats_from(self, link: Link, message: pb.Heartbeats) -> None:
        for heartbeat in message.heartbeats:
            self.heartbeat_from(link, heartbeat)

    def heartbeat_from(self, link: Link, message: pb.Heartbeat) -> None:
        try:
            key = ExecutionKey.parse(message.execution_id)
        except ValueError:
            return
        assert self._heartbeats is not None
        self._heartbeats.add((link, Fenced(key, message.fence)))

    async def _record(self, batch: list[tuple[Link | None, AttemptResult]]) -> None:
        began = time.perf_counter()
        outcome = await self._store.occurrences.record_results([r for _, r in batch])
        self.stats.record_batches += 1
        if self.metrics is not None:
            self.metrics.record_seconds.observe(time.perf_counter() - began)
            self.metrics.record_size.observe(len(batch))
        sent = {(r.key, r.fence): (link, r.outcome) for link, r in batch}
        acks: defaultdict[Link, pb.Acknowledgements] = defaultdict(pb.Acknowledgements)
        for recorded in outcome.recorded:
            link, attempt_outcome = sent[(recorded.key, recorded.fence)]
            if link is not None:
                acks[link].accepted.add(execution_id=recorded.key.id, fence=recorded.fence)
            self._finished(recorded, attempt_outcome)
        self.stats.recorded += len(outcome.recorded)
        for stale in outcome.stale:
            self.stats.stale += 1
            link = sent[(stale.key, stale.fence)][0]
            if link is not None:
                acks[link].stale.add(
                    execution_id=stale.key.id,
                    fence=stale.fence,
                    current_fence=stale.current_fence or 0,
                )
            entry = self.in_flight.get(stale.key)
            if entry is not None and entry.fence == stale.fence:
                self._done(stale.key)
        for link, ack in acks.items():
            link.send(pb.SchedulerMessage(acknowledgements=ack))

    def _finished(self, recorded: Recorded, outcome: Outcome | None) -> None:
        """After a recorded attempt: counts, breaker, overlap queue, and a retry into the wheel."""
        if self.metrics is not None and outcome is not None:
            self.metrics.executions.labels(outcome.value).inc()
        if self.metrics is not None and recorded.status in _FINAL:
            self.metrics.finished.labels(recorded.status.value).inc()
        entry = self._done(recorded.key)
        if entry is None:
            return
        item = entry.ready
        if outcome is not Outcome.NOT_STARTED:
            succeeded = outcome is Outcome.SUCCEEDED
            self.breakers.record(item.task_type, succeeded, time.monotonic())
        if recorded.status is not ExecutionStatus.PENDING:
            # A run going back to pending (a retry) keeps its place: the runs waiting
            # behind it go after it, or its retry would be skipped as overlapping.
            self.release_blocked(recorded.key.job_id)
        if recorded.status is ExecutionStatus.PENDING and item.partition in self.owned:
            item.fire_at_ms = _ms(recorded.fire_at)
            if outcome is Outcome.NOT_STARTED:
                # No executor could take it (none for its task type, or draining):
                # ask again shortly rather than in a tight loop.
                item.fire_at_ms = max(
                    item.fire_at_ms, int(time.time() * 1000) + _NOT_STARTED_BACKOFF_MS
                )
            self.known[recorded.key] = item
            self._by_partition[item.partition].add(recorded.key)
            self.driver.add(recorded.key, self.claim_at(item.fire_at_ms))

    def _done(self, key: ExecutionKey) -> InFlight | None:
        entry = self.in_flight.pop(key, None)
        if entry is not None:
            tenant = entry.ready.tenant
            self.tenant_in_flight[tenant] -= 1
            if self.tenant_in_flight[tenant] <= 0:
                del self.tenant_in_flight[tenant]
            self._wake.set()
        return entry

    async def _heartbeat(self, batch: list[tuple[Link, Fenced]]) -> None:
        by_executor: defaultdict[str, list[tuple[Link, Fenced]]] = defaultdict(list)
        for link, item in batch:
            by_executor[link.executor_id].append((link, item))
        expires = time.monotonic() + self.config.lease_s + 5
        for executor_id, items in by_executor.items():
            links = {(i.key, i.fence): link for link, i in items}
            stale = await self._store.occurrences.heartbeat(
                [i for _, i in items], executor_id=executor_id, lease_s=self.config.lease_s
            )
            refused = {(s.key, s.fence) for s in stale}
            for _, item in items:
                entry = self.in_flight.get(item.key)
                if entry is not None and (item.key, item.fence) not in refused:
                    entry.expires = expires
            acks: defaultdict[Link, pb.Acknowledgements] = defaultdict(pb.Acknowledgements)
            for item in stale:
                acks[links[(item.key, item.fence)]].stale.add(
                    execution_id=item.key.id, fence=item.fence, current_fence=0
                )
            for link, ack in acks.items():
                link.send(pb.SchedulerMessage(acknowledgements=ack))

    async def reap(self) -> int:
        """Expired leases of owned partitions become failed attempts (the store's rule)."""
        recorded = await self._store.occurrences.reap(dict(self.owned))
        for item in recorded:
            self._finished(item, Outcome.LEASE_EXPIRED)
        self.stats.reaped += len(recorded)
        return len(recorded)

    def sweep(self) -> int:
        """Forget in-flight entries whose lease is long gone (recorded by another node)."""
        now = time.monotonic()
        gone = [key for key, entry in self.in_flight.items() if entry.expires < now]
        for key in gone:
            self._done(key)
        return len(gone)


def _clean_error(error: str) -> str | None:
    """An executor's error text as Postgres can store it (no NUL), bounded."""
    if not error:
        return None
    return error.replace("\x00", "\\0")[:_MAX_ERROR_CHARS]
