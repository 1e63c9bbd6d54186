"""Executions: keyset pages that stay stable under inserts, every attempt, retry and cancel."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.store import factories as make
from wheel.errors import InvalidArgument, InvalidTransition, NotFound
from wheel.model.executions import AttemptResult, ExecutionStatus, Outcome
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.store import Store


async def test_pages_are_stable_under_concurrent_inserts(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner)
    start = make.soon()
    existing = [start + timedelta(minutes=2 * n) for n in range(40)]
    await store.occurrences.insert([make.occurrence(job, t) for t in existing])

    async def insert_more() -> None:
        # Between and around the existing ones, while the reader pages.
        for n in range(40):
            await store.occurrences.insert(
                [make.occurrence(job, start + timedelta(minutes=2 * n + 1))]
            )
            await asyncio.sleep(0)

    writer = asyncio.create_task(insert_more())
    seen, token = [], ""
    while True:
        page, token = await store.executions.list(
            owner.id, job_id=job.id, page_size=3, page_token=token
        )
        seen.extend(e.key.scheduled_for for e in page)
        await asyncio.sleep(0)
        if not token:
            break
    await writer
    assert len(seen) == len(set(seen)), "no execution is listed twice"
    assert set(existing) <= set(seen), "every execution that existed before is listed"
    assert seen == sorted(seen, reverse=True)


async def test_list_filters_by_status_and_time_and_is_tenant_scoped(store: Store) -> None:
    owner, stranger = await make.tenant(store), await make.tenant(store)
    job = await make.job(store, owner, partition=2)
    times = make.minutes(make.soon(), 6)
    await store.occurrences.insert([make.occurrence(job, t) for t in times])
    await store.executions.cancel(owner.id, ExecutionKey(job.id, times[0]))
    cancelled, _ = await store.executions.list(owner.id, statuses=[ExecutionStatus.CANCELLED])
    assert [e.key.scheduled_for for e in cancelled] == [times[0]]
    window, _ = await store.executions.list(
        owner.id, scheduled_after=times[2], scheduled_before=times[4]
    )
    assert [e.key.scheduled_for for e in window] == [times[3], times[2]]
    assert await store.executions.list(stranger.id) == ([], "")
    with pytest.raises(NotFound):
        await store.executions.get(stranger.id, ExecutionKey(job.id, times[1]))
    with pytest.raises(NotFound):
        await store.executions.cancel(stranger.id, ExecutionKey(job.id, times[1]))


async def test_a_forged_page_token_is_invalid_argument(store: Store) -> None:
    owner = await make.tenant(store)
    with pytest.raises(InvalidArgument, match="page_token"):
        await store.executions.list(owner.id, page_token="not-a-token")
    with pytest.raises(InvalidArgument, match="page_size: 5000 is not in 1-1000"):
        await store.executions.list(owner.id, page_size=5000)


async def test_get_shows_every_attempt_and_retry_revives_a_dead_one(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=3, max_attempts=2, backoff_base=timedelta(0))
    at = make.soon()
    key = ExecutionKey(job.id, at)
    await store.occurrences.insert([make.occurrence(job, at)])
    epochs = {PartitionId(3): 1}
    await store.occurrences.set_epochs(epochs, node_id="n")
    for n in range(2):
        (claim,) = await store.occurrences.claim([key], epochs, lease_s=30)
        await store.occurrences.record_results(
            [AttemptResult(key, claim.fence, Outcome.FAILED, executor_id=f"ex-{n}", error=f"e{n}")]
        )
    dead = await store.executions.get(owner.id, key)
    assert dead.status is ExecutionStatus.DEAD
    assert [(a.number, a.fence, a.executor_id, a.outcome, a.error) for a in dead.attempts] == [
        (1, 1, "ex-0", Outcome.FAILED, "e0"),
        (2, 2, "ex-1", Outcome.FAILED, "e1"),
    ]
    with pytest.raises(InvalidTransition, match=r"cannot cancel execution .*: it is dead"):
        await store.executions.cancel(owner.id, key)
    revived = await store.executions.retry(owner.id, key)
    assert (revived.status, revived.reason) == (ExecutionStatus.PENDING, "manual retry")
    with pytest.raises(InvalidTransition, match="it is pending"):
        await store.executions.retry(owner.id, key)
    (claim,) = await store.occurrences.claim([key], epochs, lease_s=30)
    assert (claim.attempt, claim.fence) == (3, 3)


async def test_a_deleted_jobs_executions_end_cancelled_and_are_not_revived(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=4, max_attempts=2)
    at = make.soon()
    key = ExecutionKey(job.id, at)
    await store.occurrences.insert([make.occurrence(job, at)])
    epochs = {PartitionId(4): 1}
    await store.occurrences.set_epochs(epochs, node_id="n")
    (claim,) = await store.occurrences.claim([key], epochs, lease_s=30)
    await store.jobs.delete(owner.id, job.id)
    # The running attempt fails after the delete: not back to pending, where nothing would claim it.
    outcome = await store.occurrences.record_results(
        [AttemptResult(key, claim.fence, Outcome.FAILED)]
    )
    assert [r.status for r in outcome.recorded] == [ExecutionStatus.CANCELLED]
    assert (await store.executions.get(owner.id, key)).reason == "job deleted"
    later = make.occurrence(job, at + timedelta(minutes=1))
    await store.occurrences.insert([later])
    assert (await store.executions.get(owner.id, later.key)).status is ExecutionStatus.CANCELLED
    dead_job = await make.job(store, owner, partition=4, max_attempts=1)
    dead_key = ExecutionKey(dead_job.id, at)
    await store.occurrences.insert([make.occurrence(dead_job, at)])
    (dead_claim,) = await store.occurrences.claim([dead_key], epochs, lease_s=30)
    await store.occurrences.record_results(
        [AttemptResult(dead_key, dead_claim.fence, Outcome.FAILED)]
    )
    await store.jobs.delete(owner.id, dead_job.id)
    with pytest.raises(InvalidTransition, match="of a deleted job"):
        await store.executions.retry(owner.id, dead_key)


async def test_recent_is_the_tenants_newest_first_within_its_window(store: Store) -> None:
    owner, stranger = await make.tenant(store), await make.tenant(store)
    job = await make.job(store, owner, partition=1)
    times = make.minutes(make.soon(), 4)
    await store.occurrences.insert([make.occurrence(job, t) for t in times])
    ahead_s = (times[2] - datetime.now(UTC)).total_seconds() + 1
    recent = await store.executions.recent(owner.id, since=times[1], upcoming_s=ahead_s, limit=10)
    assert [r.scheduled_for for r in recent] == [times[2], times[1]]
    assert {(r.job_name, r.status, r.attempt) for r in recent} == {(job.spec.name, "pending", 0)}
    newest = await store.executions.recent(owner.id, since=times[0], upcoming_s=3600, limit=1)
    assert [r.scheduled_for for r in newest] == [times[3]]
    assert (
        await store.executions.recent(stranger.id, since=times[0], upcoming_s=3600, limit=9) == []
    )


async def test_the_database_clock_is_read_between_two_local_readings(store: Store) -> None:
    ticks = iter(range(100, 200))
    samples = await store.clock.samples(3, local=lambda: float(next(ticks)))
    assert [(s.sent_s, s.received_s) for s in samples] == [(100, 101), (102, 103), (104, 105)]
    now_s = datetime.now(UTC).timestamp()
    assert all(abs(s.database_s - now_s) < 60 for s in samples)


async def test_oldest_first_pages_through_soonest_first_and_tokens_keep_their_order(
    store: Store,
) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=2)
    times = make.minutes(make.soon(), 5)
    await store.occurrences.insert([make.occurrence(job, t) for t in times])
    for of_job in (None, job.id):
        seen: list[datetime] = []
        token = ""
        while True:
            page, token = await store.executions.list(
                owner.id, job_id=of_job, page_size=2, page_token=token, oldest_first=True
            )
            seen.extend(e.key.scheduled_for for e in page)
            if not token:
                break
        assert seen == times, "soonest first, every run once"
    _, newest_token = await store.executions.list(owner.id, page_size=2)
    with pytest.raises(InvalidArgument, match="other order"):
        await store.executions.list(owner.id, page_token=newest_token, oldest_first=True)
