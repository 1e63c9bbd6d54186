"""Fire, claim, dispatch: the work of one node over the partitions it owns.

The timing wheel holds the loaded occurrences of owned partitions and fires
each ahead of its instant: at least `prefetch_ms` for a run that can overlap
nothing, earlier when its instant is crowded (`claim_ahead`), and `lead_ms`
for one of an overlap-limited job. A fired occurrence waits in the
ready queues (fair across tenants, priority first) until executors have
credit for its pool; then it is claimed in a batch — one statement, fenced by
the partition epochs — and dispatched down a stream with `start_at` = its
instant, so the database round trip happens before the instant, not after.

The roles around this loop have modules of their own: runs waiting for their
job's running one (`overlap`), runs held aside for a breaker, a tenant cap or
a missing executor (`aside`), runs in flight (`in_flight`), and results and
heartbeats (`recorder`). The engine reads time only from its injected clock,
reports events to an observer, and speaks domain types: the stream turns them
into protobuf.

The wheel is a cache: anything dropped here (a partition handed over, a
claim that failed) is still pending in Postgres and is loaded again by
whoever owns it.

A lease that lapsed is the executor's doing only if it was silent: the
reaper spares attempts whose result or heartbeat waits in the recorder, and
holds back (and probes) only an executor that said nothing for
SILENT_HEARTBEATS heartbeat intervals. `stalled()` (`stall`) says when runs
wait although executors hold credit for them and nothing goes: readiness
fails then, with the reason.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from wheel import tracing
from wheel.cancelling import end
from wheel.model.executions import (
    AttemptResult,
    DueOccurrence,
    ExecutionStatus,
    Fenced,
    Outcome,
    Recorded,
)
from wheel.model.http_tasks import route_pool
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.scheduler.aside import Aside
from wheel.scheduler.breaker import Breakers
from wheel.scheduler.claim_ahead import ClaimAhead
from wheel.scheduler.claims import Claims
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.in_flight import InFlightRuns
from wheel.scheduler.links import Link, Links
from wheel.scheduler.observer import (
    UPCOMING_WINDOWS_MS,
    EngineObserver,
    EngineSnapshot,
    EngineStats,
    NoObserver,
)
from wheel.scheduler.overlap import OverlapQueues
from wheel.scheduler.ready import Ready, ReadyQueues, epoch_ms
from wheel.scheduler.recorder import Recorder
from wheel.scheduler.stall import stalled
from wheel.store import Store
from wheel.timingwheel import Alarm, Clock, FiredBatch, SystemClock, WheelDriver

log = logging.getLogger(__name__)

_ADD_CHUNK = 10_000
_FINAL = (ExecutionStatus.SUCCEEDED, ExecutionStatus.DEAD, ExecutionStatus.NEEDS_REVIEW)
_NOT_STARTED_BACKOFF_MS = 1000
_NOT_STARTED_BACKOFF_MAX_MS = 60_000
SILENT_HEARTBEATS = 2
"""An executor silent for this many heartbeat intervals when a lease of its lapses is held
back: a live one holding a running run heartbeats every interval."""
LOST_HEARTBEATS = 4
"""An executor that holds runs and answers nothing, probes included, for this many heartbeat
intervals is let go (`probe`): gRPC's keepalive does not always notice a frozen one."""
HANDOVER_MARGIN_MS = 1000
"""When a stream ends, what it was handed that is due later than this is given back at once
(its executor gives it back too, and never starts it: `wheel.executor.executions`)."""


class Engine:
    """The owned partitions' occurrences, from the wheel to a dispatched attempt."""

    def __init__(
        self,
        config: SchedulerConfig,
        store: Store,
        links: Links,
        *,
        clock: Clock | None = None,
        alarm: Alarm | None = None,
        observer: EngineObserver | None = None,
        heartbeats: Store | None = None,
    ) -> None:
        """`clock` is read for every instant and timeout (`alarm` wakes the wheel; both
        default to the system's and the running loop's); `observer` hears every event;
        `heartbeats` is a store whose connections only heartbeats use (default: `store`)."""
        self.config = config
        self._store = store
        self.links = links
        self._clock: Clock = clock or SystemClock()
        self._observer: EngineObserver = observer or NoObserver()
        self.owned: dict[PartitionId, int] = {}
        """Partitions owned now, with their epochs."""
        self.driver: WheelDriver[ExecutionKey] = WheelDriver(
            self._fired, clock=self._clock, alarm=alarm
        )
        self.ready = ReadyQueues()
        self.claim_ahead = ClaimAhead(
            slice_ms=config.claim_slice_ms, floor_ms=config.prefetch_ms,
            cap_ms=config.prefetch_max_ms, rate_per_s=config.handover_rate_per_s,
        )  # fmt: skip
        self.known: dict[ExecutionKey, Ready] = {}
        """Loaded and not yet claimed: in the wheel, waiting, parked, blocked or being claimed."""
        self._by_partition: defaultdict[PartitionId, set[ExecutionKey]] = defaultdict(set)
        self.in_flight = InFlightRuns()
        self.breakers = Breakers(
            threshold=config.breaker_failures,
            cooldown_s=config.breaker_cooldown_s,
            probe_timeout_s=config.lease_s + config.breaker_cooldown_s,
        )
        self.stats = EngineStats()
        self._wake = asyncio.Event()
        self.overlap = OverlapQueues(forget=self._forget, release=self._release)
        self.aside = Aside(
            self.ready, links, self.breakers, known=self.known.__contains__, wake=self._wake.set
        )
        self.recorder = Recorder(
            config, store.occurrences, self.in_flight, stats=self.stats,
            observer=self._observer, clock=self._clock, finished=self._finished,
            recorded=self._wake.set,  # claims held back while recording was behind may go
            heartbeats=(heartbeats or store).occurrences,
        )  # fmt: skip
        self.claims = Claims(
            config, store.occurrences, links, ready=self.ready, in_flight=self.in_flight,
            breakers=self.breakers, aside=self.aside, overlap=self.overlap,
            recorder=self.recorder, owned=self.owned, known=self.known.__contains__,
            forget=self._forget, refile=self._refile, wake=self._wake.set, clock=self._clock,
            observer=self._observer, stats=self.stats,
        )  # fmt: skip
        self._spread_next_ms = 0.0
        self._handed_back: set[ExecutionKey] = set()
        """Given back because their stream ended: claimed again at once, no backoff."""
        self._dispatcher: asyncio.Task[None] | None = None
        self._started_s = self._now_s()

    def now(self) -> datetime:
        """The engine's clock as an instant (what the loader and materialiser read too)."""
        return datetime.fromtimestamp(self._clock.wall_ms() / 1000, UTC)

    def note_skipped(self, reason: str, count: int) -> None:
        """Runs the loader or the materialiser recorded skipped: 'misfire', 'superseded'."""
        if count:
            self._observer.skipped(reason, count)

    def _now_s(self) -> float:
        """Monotonic seconds, for breakers, retries and leases kept here."""
        return self._clock.monotonic_ms() / 1000

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._started_s = self._now_s()
        self.driver.start()
        self.recorder.start()
        self._dispatcher = asyncio.create_task(self._dispatch_loop(), name="dispatcher")

    async def stop(self) -> None:
        """Stop claiming; record what has come in; leave the rest pending in Postgres."""
        self.driver.close()
        if self._dispatcher is not None:
            await end(self._dispatcher)  # a cancellation psycopg_pool lost is repeated
        await self.claims.stop()
        await self.recorder.stop()

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
        self.aside.drop_partition(partition)
        self.overlap.drop_partition(partition)

    # -- loading ---------------------------------------------------------------------------

    def add_due(self, due: Sequence[DueOccurrence], *, spread_per_s: int | None = None) -> int:
        """File loaded occurrences in the wheel (those already known or running are left).

        With `spread_per_s`, overdue ones are released no faster than that
        (catch-up after an outage must not become a second outage).
        """
        now_ms = self._clock.wall_ms()
        lead_ms, slice_ms = self.config.lead_ms, self.config.claim_slice_ms
        entries: list[tuple[ExecutionKey, int]] = []
        ahead: list[int] = []
        """Indexes in `entries` of runs that overlap nothing: planned by `claim_ahead`."""
        heads: set[Any] = set()
        for occurrence in due:
            key = occurrence.key
            if occurrence.partition not in self.owned or key in self.known:
                continue
            if key in self.in_flight:
                continue
            fire_at_ms = epoch_ms(occurrence.fire_at)
            ready = Ready(
                key, occurrence.partition, occurrence.tenant_id,
                route_pool(occurrence.pool, occurrence.task_type), occurrence.task_type,
                occurrence.priority, occurrence.overlap, fire_at_ms,
            )  # fmt: skip
            self.known[key] = ready
            self._by_partition[occurrence.partition].add(key)
            if occurrence.overlap == "wait" and self.overlap.behind_head(ready, heads):
                continue
            if occurrence.overlap == "allow":
                ahead.append(len(entries))
                entries.append((key, fire_at_ms))
            else:
                entries.append((key, (fire_at_ms - lead_ms) // slice_ms * slice_ms))
        if ahead:
            planned = self.claim_ahead.plan([entries[i][1] for i in ahead], now_ms)
            for index, deadline in zip(ahead, planned, strict=True):
                entries[index] = (entries[index][0], deadline)
        if spread_per_s:
            for index, (key, deadline) in enumerate(entries):
                if deadline < now_ms:
                    # One release schedule for every catch-up, however many pages or partitions.
                    self._spread_next_ms = max(self._spread_next_ms, now_ms)
                    entries[index] = (key, int(self._spread_next_ms))
                    self._spread_next_ms += 1000 / spread_per_s
        for first in range(0, len(entries), _ADD_CHUNK):
            self.driver.add_many(entries[first : first + _ADD_CHUNK])
        self.stats.loaded += len(entries)
        return len(entries)

    def add_created(self, due: Sequence[DueOccurrence]) -> int:
        """Runs of jobs this node's API just created (committed): those of owned partitions
        that are to be claimed now go in the wheel at once, so a run-now job does not wait
        for its notification to be read back and loaded. The rest are the loader's, as
        every run is; the notified load then finds these known and leaves them."""
        now_ms = self._clock.wall_ms()
        soon_ms = now_ms + self.config.prefetch_ms  # claimed by now however crowded
        now: list[DueOccurrence] = []
        for occurrence in due:
            fire_ms = epoch_ms(occurrence.fire_at)
            soon = occurrence.overlap == "allow" and fire_ms <= soon_ms
            if soon or self.claim_at(fire_ms, occurrence.overlap) <= now_ms:
                now.append(occurrence)
        return self.add_due(now) if now else 0

    def claim_at(self, fire_at_ms: int, overlap: str) -> int:
        """When the wheel hands an occurrence over for claiming, in slices.

        A run that can overlap nothing ('allow': one-offs, jobs that allow it) is
        claimed at least `prefetch_ms` ahead, more when its second is crowded
        (`claim_ahead`), and held by its executor until its instant, so a spike's
        database work is done before the spike. A run of an
        overlap-limited job is claimed only `lead_ms` ahead: the claim checks for
        a running predecessor, and should see it as late as it can. Occurrences
        are released a slice (`claim_slice_ms`) at a time, so one claim statement
        takes everything due in a slice instead of the two or three a millisecond
        brings; the executor still starts each at its instant.
        """
        if overlap == "allow":
            return self.claim_ahead.claim_at(fire_at_ms)
        slice_ms = self.config.claim_slice_ms
        return (fire_at_ms - self.config.lead_ms) // slice_ms * slice_ms

    def _forget(self, key: ExecutionKey) -> Ready | None:
        ready = self.known.pop(key, None)
        if ready is not None:
            keys = self._by_partition.get(ready.partition)
            if keys is not None:
                keys.discard(key)
        return ready

    def _release(self, item: Ready) -> None:
        """A run that waited (overlap) goes back to be claimed, unless it was dropped."""
        if item.key in self.known:
            self.ready.push(item)
            self._wake.set()

    def _refile(self, item: Ready) -> None:
        """Back in the wheel, to be claimed in time for its (new) instant."""
        self.driver.add(item.key, self.claim_at(item.fire_at_ms, item.overlap))

    def link_lost(self, link: Link) -> int:
        """A stream ended: forget its link, and give back what never reached it and what
        reached it but is not due within HANDOVER_MARGIN_MS, so that another executor takes
        those now rather than when their leases run out. The rest stays its executor's (it
        may have started them) until it reports, or its leases lapse. How many went back."""
        self.links.disconnect(link)
        given = set(self.recorder.undelivered(link))
        after_ms = self._clock.wall_ms() + HANDOVER_MARGIN_MS
        for key, entry in self.in_flight.on(link):
            fenced = Fenced(key, entry.fence)
            if key in self._handed_back:
                continue  # given back already (the stream's end is heard twice)
            if fenced not in given and entry.ready.fire_at_ms > after_ms:
                self.recorder.submit(None, AttemptResult(key, entry.fence, Outcome.NOT_STARTED))
                given.add(fenced)
        self._handed_back.update(fenced.key for fenced in given)
        if given:
            log.info("engine.handed_back", extra={"executor": link.executor_id,
                                                  "runs": len(given)})  # fmt: skip
        return len(given)

    def retry_blocked(self) -> None:
        """Try every queued occurrence again (its predecessor may have finished elsewhere)."""
        self.overlap.release_all()

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
                self.claims.round()
            except Exception:  # a bug here must not stop every dispatch of this node
                log.exception("engine.round_failed")
            self.claim_ahead.observe(self._now_s(), self.stats.dispatched, len(self.ready))
            waits = [
                asyncio.ensure_future(self._wake.wait()),
                asyncio.ensure_future(changed.wait()),
            ]
            next_change = self.aside.next_change_s()
            timeout = None if next_change is None else max(0.0, next_change - self._now_s())
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            for waiter in waits:
                waiter.cancel()
            self._wake.clear()
            changed.clear()
            try:
                self.aside.revisit(self._now_s())
            except Exception:
                log.exception("engine.unpark_failed")

    def pressure(self) -> dict[str, object]:
        """What the dispatcher sees: credit, claims in flight, and what waits aside, per pool."""
        pools = set(self.ready.pools())
        return {
            "credit": {pool: self.links.credit(pool) for pool in sorted(pools)},
            "claims_running": self.claims.running,
            "held_back": len(self.links.held_back()),
            "results_waiting": self.recorder.waiting(),
            **self.aside.counts(),
            "blocked": self.overlap.waiting(),
        }

    # -- after an attempt ------------------------------------------------------------------

    def _finished(self, recorded: Recorded, outcome: Outcome | None) -> None:
        """After a recorded attempt: counts, breaker, overlap queue, and a retry into the wheel."""
        if outcome is not None:
            self._observer.attempt_recorded(outcome)
        if recorded.status in _FINAL:
            self._observer.execution_finished(recorded.status)
        handed_back = recorded.key in self._handed_back
        self._handed_back.discard(recorded.key)
        entry = self.in_flight.done(recorded.key)
        if entry is None:
            return
        self._wake.set()
        item = entry.ready
        now_s = self._now_s()
        if item.tenant in self.aside.capped:
            self.aside.release_capped(now_s, item.tenant)  # room for another of its runs
        if outcome is not Outcome.NOT_STARTED:
            # A rejection is an answer (a 4xx): the endpoint is up, the request was wrong.
            healthy = outcome in (Outcome.SUCCEEDED, Outcome.REJECTED)
            self.breakers.record(item.task_type, healthy, now_s)
        if recorded.status is not ExecutionStatus.PENDING:
            # A run going back to pending (a retry) keeps its place: the runs waiting
            # behind it go after it, or its retry would be skipped as overlapping.
            self.overlap.release(recorded.key.job_id)
        if recorded.status is ExecutionStatus.PENDING and item.partition in self.owned:
            item.fire_at_ms = epoch_ms(recorded.fire_at)
            if outcome is Outcome.NOT_STARTED and not handed_back:
                # Given back unstarted (an executor draining or behind): ask again after a
                # backoff that doubles each time, up to a minute, so a run that keeps being
                # refused costs little. One whose stream ended goes again at once.
                backoff_ms = min(_NOT_STARTED_BACKOFF_MS << min(item.not_started, 16),
                                 _NOT_STARTED_BACKOFF_MAX_MS)  # fmt: skip
                item.not_started += 1
                item.fire_at_ms = max(item.fire_at_ms, self._clock.wall_ms() + backoff_ms)
            else:
                item.not_started = 0
            self.known[recorded.key] = item
            self._by_partition[item.partition].add(recorded.key)
            self._refile(item)

    async def reap(self) -> int:
        """Expired leases of owned partitions become failed attempts (the store's rule),
        except those whose result or heartbeat waits in the recorder."""
        began_ns = time.time_ns()
        spare = self.recorder.reporting()
        recorded = await self._store.occurrences.reap(dict(self.owned), spare=spare)
        silent_s = SILENT_HEARTBEATS * self.config.heartbeat_interval_s
        for item in recorded:
            if tracing.enabled():
                status, ended_ns = item.status.value, time.time_ns()
                tracing.recorded(item.key, item.fence, "lease_expired", status, began_ns, ended_ns)
            entry = self.in_flight.get(item.key)
            held = entry is not None and entry.fence == item.fence  # not a later re-dispatch's
            link = entry.link if entry is not None and held else None
            if (
                link is not None
                and not link.http_runner
                and self.links.silent_for_s(link) > silent_s
                and self.links.hold_back(link)
            ):
                # Silent while its stream looks up: paused, frozen or cut off. Its retry,
                # and everything else, goes elsewhere until it answers a probe.
                log.warning(
                    "engine.executor_held_back",
                    extra={"executor": link.executor_id, "execution": item.key.id,
                           "silent_s": round(self.links.silent_for_s(link), 3)},
                )  # fmt: skip
            self._finished(item, Outcome.LEASE_EXPIRED)
        self.stats.reaped += len(recorded)
        return len(recorded)

    def probe(self) -> int:
        """Ask the executors held back or silent whether they are there (once per heartbeat
        interval), and let go of one that holds runs of this node and has answered nothing
        for LOST_HEARTBEATS intervals: frozen or cut off, though its stream looks up. Its runs
        not yet due go to other executors now (`link_lost`), not when their leases run out."""
        interval_s = self.config.heartbeat_interval_s
        asked = self.links.probe(interval_s)
        for link in self.links.silent(LOST_HEARTBEATS * interval_s):
            if link.open and self.in_flight.by_link.get(link.serial):
                log.warning(
                    "engine.executor_lost",
                    extra={"executor": link.executor_id,
                           "silent_s": round(self.links.silent_for_s(link), 1)},
                )  # fmt: skip
                link.let_go("it answered nothing: its runs not yet due go elsewhere", 1.0)
                self.link_lost(link)
        return asked

    def stalled(self) -> str | None:
        """Why this node dispatches nothing although it could, or None (`stall`)."""
        return stalled(
            self.ready, self.links, self.claims, self.recorder,
            stall_s=self.config.dispatch_stall_s, now_ms=self._clock.wall_ms(),
            now_s=self._now_s(), since_s=self._started_s,
        )  # fmt: skip

    def sweep(self) -> int:
        """Forget in-flight entries whose lease is long gone (recorded by another node), but
        for those whose result or heartbeat waits in the recorder."""
        expired = self.in_flight.expired(self._now_s())
        spare = {fenced.key for fenced in self.recorder.reporting()} if expired else set()
        gone = [key for key in expired if key not in spare]
        for key in gone:
            self.in_flight.done(key)
        if gone:
            self._wake.set()
        return len(gone)

    # -- what others read ------------------------------------------------------------------

    def snapshot(self) -> EngineSnapshot:
        """The engine's state now: cheap (nothing here walks the loaded occurrences)."""
        pools = set(self.ready.pools()) | {p for link in self.links for p in link.pools}
        parked = self.aside.parked
        return EngineSnapshot(
            at_ms=self._clock.wall_ms(),
            timers=len(self.driver),
            owned=len(self.owned),
            in_flight=len(self.in_flight),
            links=len(self.links),
            ready={pool: self.ready.waiting(pool) for pool in sorted(self.ready.pools())},
            credit={pool: self.links.credit(pool, held_back=True) for pool in sorted(pools)},
            held_back=len(self.links.held_back()),
            unserved=self.aside.unserved_by_task_type(),
            breakers={
                task_type: (state.value, len(parked.get(task_type, ())))
                for task_type, state in sorted(self.breakers.not_closed().items())
            },
            oldest_ready_ms=self.ready.oldest_fire_at_ms(),
            oldest_ready_by_pool={
                pool: oldest
                for pool in sorted(self.ready.pools())
                if (oldest := self.ready.oldest_fire_at_ms(pool)) is not None
            },
            stalled=self.stalled(),
            pressure=self.pressure(),
        )

    def upcoming(self) -> dict[tuple[str, str], int]:
        """Loaded occurrences due within each of `UPCOMING_WINDOWS_MS`, by (pool, window):
        one pass over every loaded occurrence, so read it at scrape time only."""
        now_ms = self._clock.wall_ms()
        counts: Counter[tuple[str, str]] = Counter()
        for item in self.known.values():
            ahead = item.fire_at_ms - now_ms
            for label, window_ms in UPCOMING_WINDOWS_MS:
                if 0 <= ahead < window_ms:
                    counts[(item.pool, label)] += 1
        return dict(counts)
