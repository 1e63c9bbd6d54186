"""The node's side of the claim's misfire rule: a run tells the claim what it waited
for, and one the claim skips as a misfire is counted and forgotten."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from tests.unit.scheduler.helpers import TOKEN, Heard, bench, due_runs, hello
from wheel.model.executions import ClaimState


async def test_a_run_due_before_its_executor_connected_waited_for_an_executor() -> None:
    heard = Heard()
    b = bench(observer=heard, prefetch_ms=0, lead_ms=0, claim_slice_ms=1)
    e = b.engine
    e.start()
    try:
        # Due a while ago, before any executor was connected: it waits unclaimed.
        due = due_runs(uuid.uuid4(), 2, overlap="allow", fire_at=b.now() - timedelta(minutes=2))
        b.occurrences.answers[due[0].key] = ClaimState.MISFIRED
        b.add(due)
        b.clock.advance(1)
        assert b.occurrences.claims == [], "nothing claimed without an executor"
        b.clock.advance(5_000)
        link = b.links.connect(hello("ex", ("report",)), TOKEN)
        b.links.grant(link, "default", 10)
        await asyncio.wait_for(b.occurrences.asked.wait(), 10)
        await e.claims.stop()  # the claim's answer handled
        assert b.occurrences.waited == [["for an executor", "for an executor"]]
        assert ("skipped", ("misfire", 1)) in heard.events
        assert e.stats.skipped_misfire == 1
        assert due[0].key not in e.known
    finally:
        await e.stop()
