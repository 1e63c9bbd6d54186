"""Results: a run is reported only by the executor it went to; a backlog holds claims back."""

from __future__ import annotations

import uuid
from typing import Any, cast

from tests.unit.scheduler.helpers import TOKEN, A, bench, due_runs, hello, item
from wheel.model.executions import AttemptResult, Outcome
from wheel.scheduler.in_flight import InFlight
from wheel.scheduler.messages import NOT_YOURS, clean_error, outgoing_to_proto
from wheel.scheduler.outgoing import Refusal


async def test_a_result_for_a_run_handed_to_another_executor_is_refused_at_once() -> None:
    b = bench()
    e = b.engine
    e.start()
    try:
        owner = e.links.connect(hello("owner"), TOKEN)
        intruder = e.links.connect(hello("intruder", instance_id="x"), TOKEN)
        key = due_runs(uuid.uuid4(), 1)[0].key
        e.in_flight.add(key, InFlight(item(A, 1, partition=3), 7, owner, 0.0))
        e.recorder.report(intruder, AttemptResult(key, 7, Outcome.SUCCEEDED))
        refused = intruder.outbox.get_nowait()
        assert refused == Refusal(key.id, 7, not_yours=True)
        wire = outgoing_to_proto(refused)
        assert wire.stale_fence.reason == NOT_YOURS
        assert wire.stale_fence.current_fence == 0, "nothing about the run is told"
        assert e.stats.refused["result.not_yours"] == 1
        assert key in e.in_flight, "the owner's run is untouched"
        assert b.occurrences.recorded == []
    finally:
        await e.stop()


async def test_nothing_is_claimed_while_results_wait_to_be_recorded() -> None:
    b = bench()
    e = b.engine
    link = e.links.connect(hello("ex", ("report",)), TOKEN)
    e.links.grant(link, "default", 10)
    due = due_runs(uuid.uuid4(), 1, overlap="allow")[0]
    b.add([due])
    e.ready.push(e.known[due.key])
    backlog = 4 * e.config.record_batch + 1
    e.recorder._results = cast(Any, [None] * backlog)  # a record backlog
    e.claims.round()
    assert e.claims.running == 0
    assert [r.key for r in e.ready] == [due.key], "it waits, unclaimed"
    assert e.pressure()["results_waiting"] == backlog
    e.recorder._results = cast(Any, [])  # recorded
    e.claims.round()
    assert e.claims.running == 1, "then it is claimed"
    await e.claims.stop()
    assert b.occurrences.claims == [[due.key]]


def test_error_texts_lose_nul_bytes_and_are_bounded() -> None:
    assert clean_error("bad\x00byte") == "bad\\0byte"
    assert clean_error("") is None
    assert len(clean_error("x" * 100_000) or "") == 8192
