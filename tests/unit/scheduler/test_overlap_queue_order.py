"""A later run of a 'queue' job never goes to a claim while an earlier one is queued: the
claim of the later one could land just after the running run's result and be taken in the
queued one's place (seen under load: a job's :30 ran before its queued :28)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from tests.unit.scheduler.helpers import TOKEN, Heard, bench, due_runs, hello
from wheel.model.executions import ClaimState
from wheel.model.ids import JobId


@dataclass
class HeardSkips(Heard):
    skip: asyncio.Event = field(default_factory=asyncio.Event)

    def skipped(self, reason: str, count: int) -> None:
        super().skipped(reason, count)
        self.skip.set()


async def test_a_later_run_joins_the_queue_without_a_claim_that_could_take_its_place() -> None:
    heard = HeardSkips()
    b = bench(observer=heard, prefetch_ms=0, lead_ms=0, claim_slice_ms=1)
    e = b.engine
    e.start()
    try:
        link = b.links.connect(hello("ex", ("report",)), TOKEN)
        b.links.grant(link, "default", 10)
        queued, later = due_runs(uuid.uuid4(), 2, overlap="queue", fire_at=b.now())
        # The job's running run is in flight elsewhere: the first claim finds it blocked.
        # The store would claim the later one (as it does once the running run's result
        # is in), so only the node's queue keeps the order.
        b.occurrences.answers[queued.key] = ClaimState.BLOCKED
        b.add([queued, later])
        b.clock.advance(1)
        await asyncio.wait_for(heard.skip.wait(), 10)
        await e.claims.stop()
        assert b.occurrences.claims == [[queued.key]], "the later one was never claimed"
        assert ("skipped", ("overlap", 1)) in heard.events
        assert [r.key for r in e.overlap.blocked[JobId(queued.key.job_id)]] == [queued.key]
        assert later.key not in e.known
    finally:
        await e.stop()


async def test_a_later_run_of_a_skip_job_waits_in_instant_order_behind_the_earlier() -> None:
    b = bench(prefetch_ms=0, lead_ms=0, claim_slice_ms=1)
    e = b.engine
    e.start()
    try:
        link = b.links.connect(hello("ex", ("report",)), TOKEN)
        b.links.grant(link, "default", 10)
        first, second, third = due_runs(uuid.uuid4(), 3, overlap="skip", fire_at=b.now())
        b.occurrences.answers[first.key] = ClaimState.BLOCKED
        b.add([first, second, third])
        b.clock.advance(1)
        await asyncio.wait_for(b.occurrences.asked.wait(), 10)
        await e.claims.stop()
        job = JobId(first.key.job_id)
        for _ in range(3):  # a round queues one or more of them
            e.claims.round()
        await e.claims.stop()
        assert b.occurrences.claims == [[first.key]], "none claimed past the waiting one"
        assert [r.key for r in e.overlap.blocked[job]] == [first.key, second.key, third.key]
    finally:
        await e.stop()
