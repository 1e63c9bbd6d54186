"""Fire, claim, dispatch, record: the work of one node over the partitions it owns.

The timing wheel holds the loaded occurrences of owned partitions and fires
each ahead of its instant: `prefetch_ms` for a run that can overlap nothing,
`lead_ms` for one of an overlap-limited job. A fired occurrence waits in the ready
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
import dataclasses
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

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
from wheel.scheduler import messages
from wheel.scheduler.batcher import Batcher
from wheel.scheduler.breaker import Breakers, BreakerState
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.links import Link, Links
from wheel.scheduler.ready import Ready, ReadyQueues
from wheel.store import Store
from wheel.timingwheel import FiredBatch, WheelDriver

if TYPE_CHECKING:
    from wheel.scheduler.metrics import NodeMetrics

log = logging.getLogger(__name__)

_ADD_CHUNK = 10_000
_RETRY_CLAIM_S = 0.2
_FINAL = (ExecutionStatus.SUCCEEDED, ExecutionStatus.DEAD, ExecutionStatus.NEEDS_REVIEW)
_NOT_STARTED_BACKOFF_MS = 1000
_NOT_STARTED_BACKOFF_MAX_MS = 60_000
_CAPPED_RETRY_S = 1.0


_K = TypeVar("_K")


def _drop_partition(waiting: dict[_K, list[Ready]], partition: PartitionId) -> None:
    """Remove a partition's occurrences from queues of waiting ones (and emptied queues)."""
    for name, items in list(waiting.items()):
        kept = [r for r in items if r.partition != partition]
        if kept:
            waiting[name] = kept
        else:
            del waiting[name]


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
    claim_s: float = 0.0
    """Time spent in claim statements (wall, summed over concurrent ones)."""
    record_s: float = 0.0
    """Time spent in record statements (wall, summed)."""
    refused: dict[str, int] = field(default_factory=dict)
    """Reports refused, by kind and reason: `result.not_yours`, `result.stale`,
    `heartbeat.refused` (a plain dict: `dataclasses.asdict` mangles a Counter)."""

    def count_refused(self, what: str, count: int = 1) -> None:
        self.refused[what] = self.refused.get(what, 0) + count


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
        self._tenant_reserved: Counter[TenantId] = Counter()
        self.capped: dict[TenantId, list[Ready]] = {}
        """By tenant: runs the claim left because the tenant is at its cluster-wide cap."""
        self._capped_retry_at: float | None = None
        self.unserved: dict[tuple[str, str], list[Ready]] = {}
        """By (pool, task type): due occurrences no connected executor serves, left unclaimed."""
        self._served_generation = -1
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
        _drop_partition(self.parked, partition)
        _drop_partition(self.capped, partition)
        _drop_partition(self.unserved, partition)
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
            deadline = claim_at(fire_at_ms, occurrence.overlap)
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

    def claim_at(self, fire_at_ms: int, overlap: str) -> int:
        """When the wheel hands an occurrence over for claiming, in slices.

        A run that can overlap nothing ('allow': one-offs, jobs that allow it) is
        claimed `prefetch_ms` ahead and held by its executor until its instant, so
        a spike's database work is done before the spike. A run of an
        overlap-limited job is claimed only `lead_ms` ahead: the claim checks for
        a running predecessor, and should see it as late as it can. Occurrences
        are released a slice (`claim_slice_ms`) at a time, so one claim statement
        takes everything due in a slice instead of the two or three a millisecond
        brings; the executor still starts each at its instant.
        """
        config = self.config
        slice_ms = config.claim_slice_ms
        ahead_ms = config.prefetch_ms if overlap == "allow" else config.lead_ms
        return (fire_at_ms - ahead_ms) // slice_ms * slice_ms

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
                self._serve_waiting()
                if self._capped_retry_at is not None and time.monotonic() >= self._capped_retry_at:
                    self._release_capped()
            except Exception:
                log.exception("engine.unpark_failed")

    def _breaker_timeout(self) -> float | None:
        """Until the next breaker change or capped retry: what the loop must wake for."""
        deadlines = [self.breakers.next_change(), self._capped_retry_at]
        due = [d for d in deadlines if d is not None]
        if not due:
            return None
        return max(0.0, min(due) - time.monotonic())

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
        """Start claims for every pool with both waiting work and executor credit.

        Each occurrence gets its executor before it is claimed: a link with
        credit that serves its task type. One no connected executor serves
        waits aside (`unserved`) without being claimed; one whose executors are
        all out of credit waits in the ready queue for the next round.
        """
        config = self.config
        cap = config.tenant_in_flight_cap

        def room(tenant: TenantId) -> int:
            return cap - self.tenant_in_flight[tenant] - self._tenant_reserved[tenant]

        if self._recording_behind():
            return  # each finished record batch wakes the dispatcher again
        now = time.monotonic()
        for pool in self.ready.pools():
            deferred: list[Ready] = []
            while self._claims_running < config.claim_concurrency and self.owned:
                free = self.links.credit(pool)
                if free <= 0 or len(deferred) >= config.claim_batch:
                    break
                taken = self.ready.take(
                    pool, min(free, config.claim_batch), room, busy=self._exclusive_claiming
                )
                if not taken:
                    break
                batch: list[tuple[Ready, Link]] = []
                for item in taken:
                    if not self.breakers.allow(item.task_type, now):
                        self.parked[item.task_type].append(item)
                        continue
                    link = self.links.take(pool, item.task_type)
                    if link is not None:
                        batch.append((item, link))
                    elif self.links.serves(pool, item.task_type):
                        deferred.append(item)  # its executors have no credit left now
                    else:
                        self._set_unserved(item)
                if not batch:
                    continue
                for item, _ in batch:
                    self._tenant_reserved[item.tenant] += 1
                    if item.overlap != "allow":
                        self._exclusive_claiming.add(item.key.job_id)
                self._claims_running += 1
                self._spawn(self._claim(batch))
            for item in deferred:
                self.ready.push(item)

    def _wait_for_room(self, item: Ready) -> None:
        """Hold a run whose tenant is at its cluster-wide cap until one of its runs finishes
        here, or `_CAPPED_RETRY_S` passes (runs finishing on other nodes make room too)."""
        self.capped.setdefault(item.tenant, []).append(item)
        if self._capped_retry_at is None:
            self._capped_retry_at = time.monotonic() + _CAPPED_RETRY_S

    def _release_capped(self, tenant: TenantId | None = None) -> None:
        tenants = list(self.capped) if tenant is None else [tenant]
        for name in tenants:
            for item in self.capped.pop(name, []):
                if item.key in self.known:
                    self.ready.push(item)
        if not self.capped:
            self._capped_retry_at = None
        elif tenant is None:
            self._capped_retry_at = time.monotonic() + _CAPPED_RETRY_S
        self._wake.set()

    def _set_unserved(self, item: Ready) -> None:
        """Hold an occurrence no connected executor serves: unclaimed, pending, no attempt."""
        waiting = self.unserved.setdefault((item.pool, item.task_type), [])
        if not waiting:
            log.warning(
                "engine.task_type_unserved",
                extra={"task_type": item.task_type, "pool": item.pool,
                       "connected": sorted({t for link in self.links for t in link.task_types})},
            )  # fmt: skip
        waiting.append(item)

    def _serve_waiting(self) -> None:
        """Occurrences set aside as unserved go back to be claimed once an executor serves them."""
        if self._served_generation == self.links.generation:
            return
        self._served_generation = self.links.generation
        for (pool, task_type), items in list(self.unserved.items()):
            if self.links.serves(pool, task_type):
                del self.unserved[(pool, task_type)]
                for item in items:
                    if item.key in self.known:
                        self.ready.push(item)

    def _spawn(self, coroutine: object) -> None:
        task = asyncio.ensure_future(coroutine)  # type: ignore[call-overload]
        self._tasks.add(task)
        task.add_done_callback(self._reap_task)

    def _reap_task(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("engine.task_failed", exc_info=task.exception())

    def _recording_behind(self) -> bool:
        """More results wait to be recorded than a few batches: claim nothing until they
        are. A finished run whose result waits here still holds its lease, and one that
        lapses before the record runs the occurrence again."""
        return self._results is not None and len(self._results) > 4 * self.config.record_batch

    def pressure(self) -> dict[str, object]:
        """What the dispatcher sees: credit, claims in flight, and what waits aside, per pool."""
        pools = set(self.ready.pools())
        return {
            "credit": {pool: self.links.credit(pool) for pool in sorted(pools)},
            "claims_running": self._claims_running,
            "results_waiting": len(self._results) if self._results is not None else 0,
            "parked": sum(len(items) for items in self.parked.values()),
            "blocked": sum(len(items) for items in self.blocked.values()),
            "unserved": sum(len(items) for items in self.unserved.values()),
        }

    async def _claim(self, batch: list[tuple[Ready, Link]]) -> None:
        config = self.config
        began = time.perf_counter()
        try:
            outcome = await self._store.occurrences.claim_batch(
                [item.key for item, _ in batch],
                dict(self.owned),
                lease_s=config.lease_s,
                ahead_s=max(config.lead_ms, config.prefetch_ms) / 1000 + 1.0,
                executors=[link.binding for _, link in batch],
                tenant_ids={item.tenant for item, _ in batch},
            )
        except WheelError as exc:
            log.warning("engine.claim_failed", extra={"size": len(batch), "error": str(exc)})
            await asyncio.sleep(_RETRY_CLAIM_S)
            for item, link in batch:
                self.links.refund(link, item.pool)
                if item.key in self.known:
                    self.ready.push(item)
            return
        finally:
            for item, _ in batch:
                self._tenant_reserved[item.tenant] -= 1
                self._exclusive_claiming.discard(item.key.job_id)
            self._claims_running -= 1
            self._wake.set()
        self.stats.claim_batches += 1
        self.stats.claim_s += time.perf_counter() - began
        if self.metrics is not None:
            self.metrics.claim_seconds.observe(time.perf_counter() - began)
            self.metrics.claim_size.observe(len(batch))
        by_key = {item.key: (item, link) for item, link in batch}
        outgoing: defaultdict[Link, list[pb.Dispatch]] = defaultdict(list)
        now, expires = datetime.now(UTC), time.monotonic() + config.lease_s + 5
        for claimed in outcome.claimed:
            item, link = by_key.pop(claimed.key)
            self._dispatch(claimed, item, link, outgoing, now, expires)
        for link, dispatches in outgoing.items():
            link.send(messages.dispatches_to_proto(dispatches))
        for item, link in by_key.values():
            self.links.refund(link, item.pool)  # not claimed: the credit is still the link's
        unclaimed_items = {item.key: item for item, _ in batch}
        overlapped: list[Ready] = []
        for unclaimed in outcome.unclaimed:
            item = unclaimed_items[unclaimed.key]
            if unclaimed.state is ClaimState.EARLY:
                item.fire_at_ms = _ms(unclaimed.fire_at)
                self.driver.add(item.key, self.claim_at(item.fire_at_ms, item.overlap))
            elif unclaimed.state is ClaimState.CAPPED:
                self._wait_for_room(item)
            elif unclaimed.state is ClaimState.BLOCKED:
                displaced = self._queue_behind(item)
                if displaced is not None:
                    overlapped.append(displaced)
            else:
                self.stats.skipped_overlap += 1
                self._forget(item.key)
        answered = {c.key for c in outcome.claimed} | {u.key for u in outcome.unclaimed}
        for item, _ in batch:
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

    def _queue_behind(self, item: Ready) -> Ready | None:
        """Wait behind the job's running occurrence; returns the one the policy skips.

        Overlap 'queue' keeps the earliest waiting occurrence and skips the rest
        (a queued one the catch-up released to try again may come back blocked
        after a later one took the place: it takes the place back); a manual or
        backfilled run ('wait') always waits.
        """
        waiting = self.blocked.setdefault(item.key.job_id, [])
        if any(w.key == item.key for w in waiting):
            return None
        if item.overlap == "wait":
            # It was first in line (released, or the one put in the wheel): it stays
            # first, so runs that wait keep their order however often they are retried.
            waiting.insert(0, item)
            return None
        if not waiting:
            waiting.append(item)
            return None
        queued = waiting[0]
        if queued.overlap != "wait" and item.key.scheduled_for < queued.key.scheduled_for:
            waiting[0] = item
            self._forget(queued.key)
            return queued
        self._forget(item.key)
        return item

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
        link: Link,
        outgoing: dict[Link, list[pb.Dispatch]],
        now: datetime,
        expires: float,
    ) -> None:
        key = item.key  # the loaded key: its id is already made
        self._forget(key)
        # The job may have been edited since it was loaded: route by what was claimed.
        item.pool, item.task_type, item.priority = claimed.pool, claimed.task_type, claimed.priority
        entry = InFlight(item, claimed.fence, link, expires)
        self.in_flight[key] = entry
        self.tenant_in_flight[item.tenant] += 1
        self.stats.claimed += 1
        if not link.open or not link.serves(claimed.pool, claimed.task_type):
            # The executor went away between credit and claim, or the job now names a
            # task type it does not run: give the attempt back (the node's own report).
            self.stats.not_started += 1
            self.submit_result(None, AttemptResult(key, claimed.fence, Outcome.NOT_STARTED))
            return
        start_at = claimed.fire_at
        deadline = max(start_at, now) + timedelta(seconds=claimed.timeout_s)
        if self.metrics is not None:
            self.metrics.lateness.observe(max(0.0, (now - start_at).total_seconds()))
        outgoing[link].append(messages.dispatch_to_proto(claimed, key, start_at, deadline))
        self.stats.dispatched += 1

    # -- results, heartbeats, reaping ------------------------------------------------------

    def undelivered(self, link: Link) -> None:
        """Dispatches still queued for a stream that ended never reached it: give them back."""
        while not link.outbox.empty():
            message = link.outbox.get_nowait()
            if message is None:
                continue
            for fenced in messages.dispatch_fences(message):
                self.stats.not_started += 1
                self.submit_result(
                    None, AttemptResult(fenced.key, fenced.fence, Outcome.NOT_STARTED)
                )

    def submit_result(self, link: Link | None, result: AttemptResult) -> None:
        assert self._results is not None
        self._results.add((link, result))

    def report(self, link: Link, result: AttemptResult) -> None:
        """A result from an executor's stream: recorded as that executor's, or refused.

        The sender is the link, never a field of the message: a run this node
        handed to another executor is refused here at once; the store checks
        the same for runs this node does not track (another node dispatched them).
        """
        result = dataclasses.replace(
            result, executor_id=link.executor_id, executor_instance=link.hello.instance_id
        )
        entry = self.in_flight.get(result.key)
        if (
            entry is not None
            and entry.fence == result.fence
            and entry.link is not None
            and entry.link.binding != link.binding
        ):
            self._refuse(link, "result", result.key.id, result.fence, not_yours=True)
            return
        self.submit_result(link, result)

    def refuse_unreadable(self, link: Link, execution_id: str, fence: int) -> None:
        """A report that cannot be read is refused like a stale one: the sender drops it."""
        log.warning("engine.bad_report", extra={"execution": execution_id[:200]})
        self._refuse(link, "result", execution_id, fence, not_yours=False)

    def _refuse(
        self, link: Link, kind: str, execution_id: str, fence: int, *, not_yours: bool
    ) -> None:
        reason = "not_yours" if not_yours else "stale"
        self.stats.count_refused(f"{kind}.{reason}")
        if self.metrics is not None:
            self.metrics.refused.labels(kind, reason).inc()
        if reason == "not_yours":
            log.warning(
                "engine.report_refused",
                extra={"kind": kind, "execution": execution_id[:200], "executor": link.executor_id,
                       "reason": "the run was not dispatched to this executor"},
            )  # fmt: skip
        refusal = messages.refusal_to_proto(execution_id, fence, not_yours=not_yours)
        link.send(pb.SchedulerMessage(stale_fence=refusal))

    def heartbeat(self, link: Link, fenced: Fenced) -> None:
        assert self._heartbeats is not None
        self._heartbeats.add((link, fenced))

    async def _record(self, batch: list[tuple[Link | None, AttemptResult]]) -> None:
        # One report per (run, fence) per statement, so each answer maps to its sender;
        # a second one (another sender, or a resend) goes in the next batch.
        first: dict[tuple[ExecutionKey, int], tuple[Link | None, AttemptResult]] = {}
        later: list[tuple[Link | None, AttemptResult]] = []
        for sent_by, result in batch:
            slot = (result.key, result.fence)
            if slot in first:
                later.append((sent_by, result))
            else:
                first[slot] = (sent_by, result)
        began = time.perf_counter()
        outcome = await self._store.occurrences.record_results([r for _, r in first.values()])
        self.stats.record_batches += 1
        self.stats.record_s += time.perf_counter() - began
        if self.metrics is not None:
            self.metrics.record_seconds.observe(time.perf_counter() - began)
            self.metrics.record_size.observe(len(first))
        acks: defaultdict[Link, pb.Acknowledgements] = defaultdict(pb.Acknowledgements)
        for recorded in outcome.recorded:
            link, result = first[(recorded.key, recorded.fence)]
            if link is not None:
                acks[link].accepted.add(execution_id=recorded.key.id, fence=recorded.fence)
            self._finished(recorded, result.outcome)
        self.stats.recorded += len(outcome.recorded)
        for stale in outcome.stale:
            link = first[(stale.key, stale.fence)][0]
            if stale.not_yours:
                if link is not None:
                    self._refuse(link, "result", stale.key.id, stale.fence, not_yours=True)
                continue
            self.stats.stale += 1
            if link is not None:
                acks[link].stale.append(
                    messages.refusal_to_proto(
                        stale.key.id, stale.fence, not_yours=False,
                        current_fence=stale.current_fence,
                    )
                )  # fmt: skip
            entry = self.in_flight.get(stale.key)
            if entry is not None and entry.fence == stale.fence:
                self._done(stale.key)
        for link, ack in acks.items():
            link.send(pb.SchedulerMessage(acknowledgements=ack))
        for again in later:
            self.submit_result(*again)
        self._wake.set()  # claims held back while recording was behind may go

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
        if item.tenant in self.capped:
            self._release_capped(item.tenant)  # one of its runs finished: room for another
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
                # Given back unstarted (an executor draining, or gone before the dispatch
                # left): ask again after a backoff that doubles each time, up to a
                # minute, so a run that keeps being refused costs little.
                backoff_ms = min(_NOT_STARTED_BACKOFF_MS << min(item.not_started, 16),
                                 _NOT_STARTED_BACKOFF_MAX_MS)  # fmt: skip
                item.not_started += 1
                item.fire_at_ms = max(item.fire_at_ms, int(time.time() * 1000) + backoff_ms)
            else:
                item.not_started = 0
            self.known[recorded.key] = item
            self._by_partition[item.partition].add(recorded.key)
            self.driver.add(recorded.key, self.claim_at(item.fire_at_ms, item.overlap))

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
        by_link: defaultdict[Link, list[Fenced]] = defaultdict(list)
        for link, item in batch:
            by_link[link].append(item)
        expires = time.monotonic() + self.config.lease_s + 5
        for link, items in by_link.items():
            refused = await self._store.occurrences.heartbeat(
                items, executor=link.binding, lease_s=self.config.lease_s
            )
            refused_set = {(r.key, r.fence) for r in refused}
            for item in items:
                entry = self.in_flight.get(item.key)
                if entry is not None and (item.key, item.fence) not in refused_set:
                    entry.expires = expires
            if refused:
                self.stats.count_refused("heartbeat.refused", len(refused))
                if self.metrics is not None:
                    self.metrics.refused.labels("heartbeat", "refused").inc(len(refused))
            if refused:
                ack = pb.Acknowledgements(
                    stale=[
                        messages.refusal_to_proto(r.key.id, r.fence, not_yours=False)
                        for r in refused
                    ]
                )
                link.send(pb.SchedulerMessage(acknowledgements=ack))

    async def reap(self) -> int:
        """Expired leases of owned partitions become failed attempts (the store's rule)."""
        recorded = await self._store.occurrences.reap(dict(self.owned))
        for item in recorded:
            entry = self.in_flight.get(item.key)
            link = entry.link if entry is not None else None
            if link is not None and link.open and not link.unresponsive:
                # Its executor let a lease lapse while the stream looks up: paused or cut
                # off. Its retry, and everything else, goes elsewhere until it speaks.
                link.unresponsive = True
                log.warning(
                    "engine.executor_unresponsive",
                    extra={"executor": link.executor_id, "execution": item.key.id},
                )
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
