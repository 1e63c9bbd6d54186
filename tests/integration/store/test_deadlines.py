"""Deadlines and failure streaks against real Postgres: who is marked, once, by whom, and
which streaks are announced, once each."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta

from tests.integration.store import factories as make
from wheel.model.executions import AttemptResult, Execution, ExecutionStatus, Outcome, Trigger
from wheel.model.ids import ExecutionKey, PartitionId, TenantId
from wheel.model.jobs import Job
from wheel.store import Store

S = ExecutionStatus
PATIENT = {"misfire_grace": timedelta(days=30)}
"""Claims of past runs in these tests must not be skipped as misfires."""


async def _owned(store: Store, *jobs: Job) -> dict[PartitionId, int]:
    epochs = {PartitionId(job.partition): 1 for job in jobs}
    await store.occurrences.set_epochs(epochs, node_id="node-a")
    return epochs


async def _succeed(store: Store, job: Job, at: datetime) -> ExecutionKey:
    key = ExecutionKey(job.id, at)
    await store.occurrences.insert([make.occurrence(job, at)])
    epochs = await _owned(store, job)
    (claim,) = await store.occurrences.claim([key], epochs, lease_s=30)
    await store.occurrences.record_results([AttemptResult(key, claim.fence, Outcome.SUCCEEDED)])
    return key


async def test_runs_past_their_deadline_are_marked_once_with_one_notification_each(
    store: Store,
) -> None:
    owner = await make.hooked(store)
    timed = await make.job(store, owner, deadline=timedelta(seconds=1), **PATIENT)
    untimed = await make.job(store, owner, **PATIENT)
    now = datetime.now(UTC).replace(microsecond=0)
    yesterday, recent = now - timedelta(days=1), now - timedelta(minutes=5)
    ahead = now + timedelta(hours=1)
    await store.occurrences.insert([
        make.occurrence(timed, yesterday), make.occurrence(timed, recent),
        make.occurrence(timed, ahead), make.occurrence(untimed, recent),
    ])  # fmt: skip
    skipped = now - timedelta(minutes=4)
    await store.occurrences.insert([make.occurrence(timed, skipped)])
    await store.occurrences.skip([ExecutionKey(timed.id, skipped)], "overlap: test")
    manual = now - timedelta(minutes=3)
    await store.occurrences.insert(
        [dataclasses.replace(make.occurrence(timed, manual), trigger=Trigger.MANUAL)]
    )
    late = await _succeed(store, timed, now - timedelta(minutes=2))  # succeeded after it
    epochs = await _owned(store, timed, untimed)

    # Two nodes that both believe they own it (or one pass racing a retry): each run once.
    first, second = await asyncio.gather(
        store.deadlines.mark_missed(epochs), store.deadlines.mark_missed(epochs)
    )
    assert first + second == 3
    assert await store.deadlines.mark_missed(epochs) == 0
    runs = {e.key.scheduled_for: e for e in await _runs(store, owner.id, timed)}
    marked = {at for at, e in runs.items() if e.deadline_missed_at is not None}
    assert marked == {yesterday, recent, late.scheduled_for}
    assert runs[recent].deadline_at == recent + timedelta(seconds=1)
    assert runs[ahead].deadline_at == ahead + timedelta(seconds=1)
    assert runs[manual].deadline_at is None  # a triggered run has no deadline
    assert runs[skipped].deadline_missed_at is None
    (other,) = await _runs(store, owner.id, untimed)
    assert (other.deadline_at, other.deadline_missed_at) == (None, None)

    taken = await store.outbox.claim("node-a", limit=20, lease_s=30)
    missed = sorted((d.key.scheduled_for, d.status) for d in taken if d.event == "deadline_missed")
    assert missed == [
        (yesterday, S.PENDING), (recent, S.PENDING), (late.scheduled_for, S.SUCCEEDED),
    ]  # fmt: skip
    assert {d.deadline_at for d in taken} >= {recent + timedelta(seconds=1)}


async def test_a_node_that_lost_the_partition_marks_nothing(store: Store) -> None:
    owner = await make.hooked(store)
    timed = await make.job(store, owner, deadline=timedelta(seconds=1))
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    await store.occurrences.insert([make.occurrence(timed, at)])
    await store.occurrences.set_epochs({PartitionId(timed.partition): 2}, node_id="node-b")
    assert await store.deadlines.mark_missed({PartitionId(timed.partition): 1}) == 0
    assert await store.deadlines.mark_missed({PartitionId(timed.partition): 2}) == 1


async def test_a_streak_is_announced_once_and_its_recovery_once(store: Store) -> None:
    owner = await make.hooked(store)
    job = await make.job(store, owner, max_attempts=1, notify_after_failures=2)
    quiet = await make.job(store, owner, max_attempts=1)
    start = make.soon()
    await make.failed_run(store, quiet, start, 1)
    await make.failed_run(store, quiet, start + timedelta(minutes=1), 1)
    await make.failed_run(store, job, start, 1)
    epochs = await _owned(store, job, quiet)
    assert await store.deadlines.check_streaks(epochs) == []  # one failure is no streak
    await make.failed_run(store, job, start + timedelta(minutes=1), 1)
    (failing,) = await store.deadlines.check_streaks(epochs)
    assert (failing.event, failing.job_id, failing.streak) == ("failing", job.id, 2)
    await make.failed_run(store, job, start + timedelta(minutes=2), 1)
    assert await store.deadlines.check_streaks(epochs) == []  # once per streak
    await _succeed(store, job, start + timedelta(minutes=3))
    (recovered,) = await store.deadlines.check_streaks(epochs)
    assert (recovered.event, recovered.streak) == ("recovered", 3)
    assert await store.deadlines.check_streaks(epochs) == []
    taken = await store.outbox.claim("node-a", limit=20, lease_s=30)
    told = [(d.event, d.key.scheduled_for, d.streak, d.streak_from) for d in taken if d.event]
    assert told == [
        ("failing", start + timedelta(minutes=1), 2, start),
        ("recovered", start + timedelta(minutes=3), 3, start),
    ]


async def _runs(store: Store, tenant: TenantId, job: Job) -> list[Execution]:
    runs, _ = await store.executions.list(tenant, job_id=job.id, page_size=100)
    return runs
