"""A page of jobs' runs that need a person, counted in one statement: due and overdue
pending runs, and failures since the latest success; scoped to the tenant and the page."""

from __future__ import annotations

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


async def test_a_page_and_a_whole_tenant_of_many_jobs_are_counted_alike(store: Store) -> None:
    """Many jobs at once (what it costs is benchmarks/attention_bench.py): the whole tenant's
    count and a page's agree on every job the page holds."""
    owner = await make.tenant(store)
    now = datetime.now(UTC)
    jobs = [await make.job(store, owner, max_attempts=1) for _ in range(200)]
    runs = [make.occurrence(j, ago(now, minutes=m)) for j in jobs[::10] for m in (0.5, 3)]
    await store.occurrences.insert(runs)
    for j in jobs[1::25]:  # the latest run ran once and died, within its grace
        await make.failed_run(store, j, ago(now, seconds=20), attempts=1)

    whole = await store.executions.attention(owner.id, None, now)
    expected = {j.id: RunsToWatch(due=2, overdue=1, failing=0) for j in jobs[::10]}
    expected |= {j.id: RunsToWatch(due=0, overdue=0, failing=1) for j in jobs[1::25]}
    assert whole == expected
    page = [j.id for j in jobs[:50]]
    assert await store.executions.attention(owner.id, page, now) == {
        k: v for k, v in expected.items() if k in page
    }
