"""Runs of an overlap 'skip' job that waited together (for an executor, say) are blocked
behind the one handed over after their instants: every one waits, in instant order, and
none is skipped here (the claim decides again when the one ahead finishes)."""

from __future__ import annotations

import uuid

from tests.unit.scheduler.helpers import bench, due_runs
from wheel.model.ids import JobId


def test_blocked_runs_of_a_skip_job_all_wait_in_instant_order() -> None:
    b = bench()
    e = b.engine
    job = uuid.uuid4()
    runs = due_runs(job, 4, overlap="skip")
    b.add(runs)
    items = [e.known[r.key] for r in runs[1:]]
    for item in reversed(items):  # blocked in any order
        assert e.overlap.queue_behind(item) is None, "it waits: nothing is skipped"
    assert [r.key for r in e.overlap.blocked[JobId(job)]] == [r.key for r in runs[1:]]
    assert all(r.key in e.known for r in runs[1:])
    e.overlap.release(JobId(job))  # the one ahead finished: the earliest goes first
    assert [r.key for r in e.overlap.blocked[JobId(job)]] == [r.key for r in runs[2:]]
