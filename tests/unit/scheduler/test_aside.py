"""Runs held aside: unserved ones are never claimed, parked ones leave with their partition."""

from __future__ import annotations

import uuid

from tests.unit.scheduler.helpers import PARTITION, TOKEN, A, bench, due_runs, hello, item


async def test_a_run_no_connected_executor_serves_is_never_claimed() -> None:
    b = bench()
    e = b.engine
    link = e.links.connect(hello("ex", ("report",)), TOKEN)
    e.links.grant(link, "default", 10)
    due = due_runs(uuid.uuid4(), 1, task_type="exmaple.hello", overlap="allow")[0]
    b.add([due])
    e.ready.push(e.known[due.key])  # fired (the wheel is not running here)
    e.claims.round()
    assert b.occurrences.claims == []
    assert [r.key for r in e.aside.unserved[("default", "exmaple.hello")]] == [due.key]
    assert link.credits["default"] == 10, "no credit was used"
    assert e.snapshot().unserved == {"exmaple.hello": 1}
    # An executor that runs it connects: the run goes back to be claimed.
    e.links.connect(hello("other", ("exmaple.hello",)), TOKEN)
    e.aside.serve_waiting()
    assert e.aside.unserved == {}
    assert [r.key for r in e.ready] == [due.key]


def test_releasing_the_partition_of_every_parked_item_leaves_nothing_to_probe() -> None:
    e = bench(breaker_failures=1, breaker_cooldown_s=0.001).engine
    parked = item(A, 1, partition=PARTITION)
    e.breakers.record(parked.task_type, False, 0.0)  # open
    e.aside.park(parked)
    e.release(PARTITION)
    assert dict(e.aside.parked) == {}
    e.aside.unpark(now_s=3600.0)  # the cool-down is over: nothing to send, nothing to fail on
    assert len(e.ready) == 0
