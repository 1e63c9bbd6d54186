"""Runs waiting for their job's running one: backfills in order, 'queue' keeps the earliest."""

from __future__ import annotations

import uuid

from tests.unit.scheduler.helpers import PARTITION, bench, due_runs
from wheel.model.ids import JobId


def test_a_backfill_puts_one_run_in_the_wheel_and_the_rest_behind_it() -> None:
    b = bench()
    e = b.engine
    job = uuid.uuid4()
    runs = due_runs(job, 1000)
    assert b.add(runs[:600]) == 1
    assert b.add(runs[600:]) == 0, "a later page goes behind the first too"
    waiting = e.overlap.blocked[JobId(job)]
    assert [r.key for r in waiting] == [r.key for r in runs[1:]], "in their order"
    e.overlap.release(JobId(job))  # the first one finished: the next may go
    assert [r.key for r in e.overlap.blocked[JobId(job)]] == [r.key for r in runs[2:]]
    assert len(e.ready) == 1
    e.release(PARTITION)
    assert e.overlap.blocked == {}
    assert e.known == {}


def test_a_waiting_run_blocked_again_keeps_its_place_at_the_front() -> None:
    b = bench()
    e = b.engine
    job = uuid.uuid4()
    runs = due_runs(job, 4)
    b.add(runs)
    for _ in range(3):  # the catch-up's retries release the first, and it is blocked again
        e.retry_blocked()
        head = e.known[runs[1].key]
        e.ready.take("default", 10, lambda tenant: 10)
        assert e.overlap.queue_behind(head) is None, "it waits"
    assert [r.key for r in e.overlap.blocked[JobId(job)]] == [r.key for r in runs[1:]]


def test_policy_queue_keeps_the_earliest_occurrence_however_the_claims_interleave() -> None:
    b = bench()
    e = b.engine
    job = uuid.uuid4()
    second, third = due_runs(job, 2, overlap="queue")
    b.add([second, third])
    queued, later = e.known[second.key], e.known[third.key]
    overlap = e.overlap
    assert overlap.queue_behind(queued) is None, "the first blocked one waits"
    e.retry_blocked()  # the catch-up lets it try again; a later one is blocked meanwhile
    assert overlap.queue_behind(later) is None
    assert overlap.queue_behind(queued) == (later, queued), "the earlier one takes its place back"
    assert [r.key for r in overlap.blocked[JobId(job)]] == [second.key]
    assert third.key not in e.known
    assert second.key in e.known
    b.add([third])
    again = e.known[third.key]
    assert overlap.queue_behind(again) == (again, queued), (
        "a later one blocked behind the queued is skipped"
    )
    assert [r.key for r in overlap.blocked[JobId(job)]] == [second.key]
