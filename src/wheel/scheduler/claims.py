"""Ready → claimed → dispatched: one claim statement per batch, each run with its executor.

Contract:
- A run is claimed only with an executor ready to take it: before the claim,
  each gets a link with credit that serves its task type. One no connected
  executor serves waits aside (unserved) without being claimed; one whose
  executors are all out of credit waits in the ready queue for the next
  round; one whose breaker is open is parked.
- A tenant's runs due now are claimed only while it has fewer runs in flight
  and in claims here than its cap allows (the claim checks the cluster-wide
  cap too, answering CAPPED); runs claimed ahead of their instant are not
  held back by either cap, and count once claimed. An overlap-limited job has
  one run in a claim at a time.
- A claim is one statement fenced by the owned partitions' epochs. Claimed
  runs are in flight from then and dispatched with `start_at` = their instant;
  the rest are answered: EARLY back to the wheel, CAPPED and AT_KEY_LIMIT
  (a concurrency key at its limit, across the cluster) aside, BLOCKED
  behind the job's running run, SKIPPED and MISFIRED (recorded by the claim)
  forgotten, anything unanswered forgotten (paused, edited, or no longer
  owned: it is still pending in Postgres). Each run tells the claim what it
  last waited for, which a misfire's reason repeats.
- A claim that fails hands the credit back and the runs to the ready queues.
- Nothing is claimed while the recorder is behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Coroutine, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from wheel import tracing
from wheel.errors import WheelError
from wheel.model.executions import (
    AttemptResult,
    Claimed,
    ClaimState,
    Outcome,
    late_by_s,
)
from wheel.model.http_tasks import route_pool
from wheel.model.ids import ExecutionKey, PartitionId, TenantId
from wheel.scheduler.aside import Aside
from wheel.scheduler.breaker import Breakers
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.in_flight import LEASE_GRACE_S, InFlight, InFlightRuns
from wheel.scheduler.links import Link, Links
from wheel.scheduler.observer import EngineObserver, EngineStats
from wheel.scheduler.outgoing import Dispatch, Dispatches
from wheel.scheduler.overlap import OverlapQueues
from wheel.scheduler.ready import Ready, ReadyQueues, epoch_ms
from wheel.scheduler.recorder import Recorder
from wheel.store.occurrences import ClaimOutcome, Occurrences
from wheel.timingwheel import Clock

log = logging.getLogger(__name__)

DUE_WITHIN_MS = 1000
"""Runs due within this are held to their tenant's cap; later ones, claimed ahead of their
instant, are not (a planned spike starts on time): the store's claim draws the same line."""
RETRY_CLAIM_S = 0.2
"""After a failed claim, its runs wait this long before they go back to the ready queues."""


class Claims:
    def __init__(
        self,
        config: SchedulerConfig,
        occurrences: Occurrences,
        links: Links,
        *,
        ready: ReadyQueues,
        in_flight: InFlightRuns,
        breakers: Breakers,
        aside: Aside,
        overlap: OverlapQueues,
        recorder: Recorder,
        owned: Mapping[PartitionId, int],
        known: Callable[[ExecutionKey], bool],
        forget: Callable[[ExecutionKey], object],
        refile: Callable[[Ready], None],
        wake: Callable[[], None],
        clock: Clock,
        observer: EngineObserver,
        stats: EngineStats,
    ) -> None:
        """`owned` is the engine's live map of partitions to epochs; `known` and `forget`
        ask about and drop a loaded run; `refile` puts one back in the wheel; `wake` tells
        the dispatcher a claim ended."""
        self._config = config
        self._occurrences = occurrences
        self._links = links
        self._ready = ready
        self._in_flight = in_flight
        self._breakers = breakers
        self._aside = aside
        self._overlap = overlap
        self._recorder = recorder
        self._owned = owned
        self._known = known
        self._forget = forget
        self._refile = refile
        self._wake = wake
        self._clock = clock
        self._observer = observer
        self._stats = stats
        self._reserved: Counter[TenantId] = Counter()
        """By tenant: runs in a claim now (counted against the cap with those in flight)."""
        self.running = 0
        """Claim statements in flight."""
        self.dispatched_at_s: dict[str, float] = {}
        """By pool: when a run of it was last dispatched (monotonic seconds)."""
        self.failing: str = ""
        """Why the last claim failed, until one succeeds ("" once one has)."""
        self._tasks: set[asyncio.Task[None]] = set()

    async def stop(self) -> None:
        """Wait for the claims already started."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def room(self, tenant: TenantId) -> int:
        """How many more of the tenant's runs this node may claim now (its in-flight cap)."""
        cap = self._config.tenant_in_flight_cap
        return cap - self._in_flight.by_tenant[tenant] - self._reserved[tenant]

    def round(self) -> None:
        """Start claims for every pool with both waiting work and executor credit."""
        config = self._config
        room = self.room
        reserved = self._reserved
        if self._recorder.behind():
            return  # each finished record batch wakes the dispatcher again
        links, ready = self._links, self._ready
        now_s = self._clock.monotonic_ms() / 1000
        due_by_ms = self._clock.wall_ms() + DUE_WITHIN_MS
        for pool in ready.pools():
            deferred: list[Ready] = []
            while self.running < config.claim_concurrency and self._owned:
                free = links.credit(pool)
                if free <= 0 or len(deferred) >= config.claim_batch:
                    break
                taken = ready.take(
                    pool, min(free, config.claim_batch), room, busy=self._overlap.claiming,
                    due_by_ms=due_by_ms,
                )  # fmt: skip
                if not taken:
                    break
                batch: list[tuple[Ready, Link]] = []
                displaced: list[tuple[Ready, Ready]] = []
                for item in taken:
                    if self._overlap.waits_behind(item):
                        item.waited = "behind its job's run in flight"
                        pair = self._overlap.queue_behind(item)
                        if pair is not None:
                            displaced.append(pair)
                        continue
                    if not self._breakers.allow(item.task_type, now_s):
                        self._aside.park(item)
                        continue
                    link = links.take(pool, item.task_type)
                    if link is not None:
                        batch.append((item, link))
                    elif links.serves(pool, item.task_type):
                        item.waited = "for a free executor slot"
                        deferred.append(item)  # its executors have no credit left now
                    else:
                        self._aside.set_unserved(item)
                if displaced:
                    self._spawn(self._skip_displaced(displaced))
                if not batch:
                    continue
                for item, _ in batch:
                    reserved[item.tenant] += 1
                    if item.overlap != "allow":
                        self._overlap.claiming.add(item.key.job_id)
                self.running += 1
                self._spawn(self._claim(batch))
            for item in deferred:
                ready.push(item)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._reap_task)

    def _reap_task(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("engine.task_failed", exc_info=task.exception())

    async def _claim(self, batch: list[tuple[Ready, Link]]) -> None:
        config = self._config
        began, began_ns = time.perf_counter(), time.time_ns()
        try:
            outcome = await self._occurrences.claim_batch(
                [item.key for item, _ in batch],
                dict(self._owned),
                lease_s=config.lease_s,
                ahead_s=max(config.lead_ms, config.prefetch_max_ms) / 1000 + 1.0,
                executors=[link.binding for _, link in batch],
                tenant_ids={item.tenant for item, _ in batch},
                waited=[self._waited(item) for item, _ in batch],
            )
        except WheelError as exc:
            log.warning("engine.claim_failed", extra={"size": len(batch), "error": str(exc)})
            self.failing = str(exc)
            await asyncio.sleep(RETRY_CLAIM_S)
            for item, link in batch:
                self._links.refund(link, item.pool)
                if self._known(item.key):
                    self._ready.push(item)
            return
        finally:
            for item, _ in batch:
                self._reserved[item.tenant] -= 1
                self._overlap.claiming.discard(item.key.job_id)
            self.running -= 1
            self._wake()
        self.failing = ""
        took = time.perf_counter() - began
        self._stats.claim_batches += 1
        self._stats.claim_s += took
        self._observer.claimed(took, len(batch))
        by_key = {item.key: (item, link) for item, link in batch}
        outgoing: defaultdict[Link, list[Dispatch]] = defaultdict(list)
        now = datetime.fromtimestamp(self._clock.wall_ms() / 1000, UTC)
        now_s = self._clock.monotonic_ms() / 1000
        for claimed in outcome.claimed:
            item, link = by_key.pop(claimed.key)
            # Its lease runs from its instant when it was claimed ahead (the store's rule).
            ahead_s = max(0.0, (claimed.fire_at - now).total_seconds())
            expires = now_s + ahead_s + config.lease_s + LEASE_GRACE_S
            dispatch = self._dispatch(claimed, item, link, now, expires)
            if dispatch is not None:
                self.dispatched_at_s[item.pool] = now_s
                if tracing.enabled():
                    trace = tracing.dispatched(claimed, began_ns, began_ns + int(took * 1e9))
                    dispatch = dataclasses.replace(dispatch, traceparent=trace)
                outgoing[link].append(dispatch)
        for link, dispatches in outgoing.items():
            link.send(Dispatches(tuple(dispatches)))
        for item, link in by_key.values():
            self._links.refund(link, item.pool)  # not claimed: the credit is still the link's
        await self._answer_unclaimed(batch, outcome)

    def _waited(self, item: Ready) -> str:
        """What a run last waited for, in words ("" when nothing says): a run due before
        its pool's executors (re)connected waited for an executor, whatever came after."""
        since_ms = self._links.offered_since_ms(item.pool)
        if since_ms is not None and item.fire_at_ms < since_ms and not item.waited:
            return "for an executor"
        return item.waited

    async def _answer_unclaimed(
        self, batch: list[tuple[Ready, Link]], outcome: ClaimOutcome
    ) -> None:
        """What the claim did not take: back to the wheel, aside, behind, or forgotten."""
        unclaimed_items = {item.key: item for item, _ in batch}
        overlapped: list[tuple[Ready, Ready]] = []
        """(skipped, the one queued instead): overlap 'queue' keeps one."""
        for unclaimed in outcome.unclaimed:
            item = unclaimed_items[unclaimed.key]
            if unclaimed.state is ClaimState.EARLY:
                item.fire_at_ms = epoch_ms(unclaimed.fire_at)
                self._refile(item)
            elif unclaimed.state is ClaimState.CAPPED:
                self._aside.wait_for_room(item, self._clock.monotonic_ms() / 1000)
            elif unclaimed.state is ClaimState.AT_KEY_LIMIT:
                self._aside.wait_for_key(item, self._clock.monotonic_ms() / 1000)
            elif unclaimed.state is ClaimState.BLOCKED:
                item.waited = "behind its job's run in flight"
                displaced = self._overlap.queue_behind(item)
                if displaced is not None:
                    overlapped.append(displaced)
            elif unclaimed.state is ClaimState.MISFIRED:
                self._stats.skipped_misfire += 1
                self._observer.skipped("misfire", 1)
                self._forget(item.key)
            else:
                self._stats.skipped_overlap += 1
                self._observer.skipped("overlap", 1)
                self._forget(item.key)
        answered = {c.key for c in outcome.claimed} | {u.key for u in outcome.unclaimed}
        for item, _ in batch:
            if item.key not in answered:
                self._forget(item.key)  # not claimable: paused, edited, or not ours any more
        if overlapped:
            await self._skip_displaced(overlapped)

    async def _skip_displaced(self, overlapped: list[tuple[Ready, Ready]]) -> None:
        """Record the runs overlap 'queue' skipped, each with the one queued instead."""
        try:
            skipped = await self._occurrences.skip_queued(
                [(item.key, queued.key) for item, queued in overlapped]
            )
        except WheelError as exc:  # still pending: the catch-up scan brings them back
            log.warning("engine.skip_failed", extra={"error": str(exc)})
            return
        # One whose job had nothing in flight any more stays pending: the catch-up
        # brings it back.
        self._stats.skipped_overlap += len(skipped)
        self._observer.skipped("overlap", len(skipped))

    def _dispatch(
        self, claimed: Claimed, item: Ready, link: Link, now: datetime, expires_s: float
    ) -> Dispatch | None:
        """A claimed run, in flight from now: its dispatch, or None if it cannot go."""
        key = item.key  # the loaded key: its id is already made
        self._forget(key)
        # The job may have been edited since it was loaded: route by what was claimed.
        item.pool = route_pool(claimed.pool, claimed.task_type)
        item.task_type, item.priority = claimed.task_type, claimed.priority
        self._in_flight.add(key, InFlight(item, claimed.fence, link, expires_s))
        self._stats.claimed += 1
        if not link.open or not link.serves(item.pool, claimed.task_type):
            # The executor went away between credit and claim, or the job now names a
            # task type it does not run: give the attempt back (the node's own report).
            self._stats.not_started += 1
            self._recorder.submit(None, AttemptResult(key, claimed.fence, Outcome.NOT_STARTED))
            return None
        start_at = claimed.fire_at
        deadline = max(start_at, now) + timedelta(seconds=claimed.timeout_s)
        self._observer.dispatched(max(0.0, late_by_s(start_at, now)))
        self._stats.dispatched += 1
        return Dispatch(key, claimed, start_at, deadline)
