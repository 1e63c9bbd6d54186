"""A page of jobs' runs that need a person, counted in one statement: due and overdue
pending runs, and failures since the latest success; scoped to the tenant and the page."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from tests.integration.store import factories as make
from wheel.model.executions import AttemptResult, Outcome, RunsToWatch
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.model.jobs import Job
from wheel.store import Store


def ago(now: datetime, **delta: float) -> datetime:
    return (now - timedelta(**delta)).replace(microsecond=0)


async def succeeded(store: Store, job: Job, at: datetime) -> None:
    key = ExecutionKey(job.id, at)
    await store.occurrences.insert([make.occurrence(job, at)])
    epochs = {PartitionId(job.partition): 1}
    await store.occurrences.set_epochs(epochs, node_id="n")
    (claim,) = await store.occurrences.claim([key], epochs, lease_s=30)
    await store.occurrences.record_results([AttemptResult(key, claim.fence, Outcome.SUCCEEDED)])


async def test_due_overdue_and_failing_runs_are_counted_per_job(store: Store) -> None:
    owner, stranger = await make.tenant(store), await make.tenant(store)
    now = datetime.now(UTC)
    stuck = await make.job(store, owner)
    await store.occurrences.insert(
        [make.occurrence(stuck, ago(now, minutes=5)), make.occurrence(stuck, ago(now, seconds=10)),
         make.occurrence(stuck, now + timedelta(minutes=5))]
    )  # fmt: skip
    failing = await make.job(store, owner, max_attempts=1)
    await succeeded(store, failing, ago(now, minutes=10))
    await make.failed_run(store, failing, ago(now, minutes=8), attempts=1)
    await make.failed_run(store, failing, ago(now, minutes=6), attempts=1)
    recovered = await make.job(store, owner, max_attempts=1)
    await make.failed_run(store, recovered, ago(now, minutes=10), attempts=1)
    await succeeded(store, recovered, ago(now, minutes=5))
    quiet = await make.job(store, owner)
    await store.occurrences.insert([make.occurrence(quiet, now + timedelta(minutes=1))])
    theirs = await make.job(store, stranger)
    await store.occurrences.insert([make.occurrence(theirs, ago(now, minutes=5))])

    found = await store.executions.attention(owner.id, None, now)
    assert found == {
        stuck.id: RunsToWatch(due=2, overdue=1, failing=0),
        failing.id: RunsToWatch(due=0, overdue=0, failing=2),
    }, "a success ends the failing; nothing due and nothing failed is left out"
    page = await store.executions.attention(owner.id, [stuck.id, quiet.id, theirs.id], now)
    assert page == {stuck.id: RunsToWatch(due=2, overdue=1, failing=0)}, (
        "only the page's jobs, and never another tenant's"
    )
    assert await store.executions.attention(stranger.id, [stuck.id], now) == {}


async def test_counting_a_page_and_a_tenant_stays_cheap(store: Store) -> None:
    """Measured, not asserted: the figures are printed for the report (pytest -s)."""
    owner = await make.tenant(store)
    now = datetime.now(UTC)
    jobs = [await make.job(store, owner) for _ in range(1000)]
    runs = [make.occurrence(j, ago(now, minutes=m)) for j in jobs[::10] for m in (2, 3)]
    await store.occurrences.insert(runs)
    for j in jobs[::50]:
        await make.failed_run(store, j, ago(now, minutes=30), attempts=3)
    for label, ids in (("50 jobs", [j.id for j in jobs[:50]]), ("1000 jobs", None)):
        await store.executions.attention(owner.id, ids, now)  # warm
        began = time.perf_counter()
        counted = await store.executions.attention(owner.id, ids, now)
        took_ms = (time.perf_counter() - began) * 1000
        print(f"attention over {label}: {took_ms:.1f} ms, {len(counted)} jobs flagged")
        assert counted
