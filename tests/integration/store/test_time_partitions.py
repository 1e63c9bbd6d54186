"""Day partitions are created ahead of need and dropped after retention, never with live work."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from tests.integration.store import factories as make
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import ExecutionKey
from wheel.store import Store

NOW = datetime(2030, 3, 15, 12, tzinfo=UTC)


async def test_partitions_are_created_ahead(store: Store) -> None:
    report = await store.time_partitions.maintain(NOW, ahead_days=3, retention_days=30)
    expected = [date(2030, 3, d) for d in range(15, 19)]
    assert report.created == expected
    assert set(expected) <= set(await store.time_partitions.existing())
    again = await store.time_partitions.maintain(NOW, ahead_days=3, retention_days=30)
    assert again.created == []


async def test_old_days_are_dropped_unless_they_hold_unfinished_work(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner)
    finished_day = NOW - timedelta(days=40)
    unfinished_day = NOW - timedelta(days=35)
    recent_day = NOW - timedelta(days=5)
    await store.occurrences.insert(
        [make.occurrence(job, t) for t in (finished_day, unfinished_day, recent_day)]
    )
    await store.executions.cancel(owner.id, ExecutionKey(job.id, finished_day))

    report = await store.time_partitions.maintain(NOW, ahead_days=0, retention_days=30)

    assert report.dropped == [finished_day.date()]
    assert report.kept_unfinished == [unfinished_day.date()]
    days = await store.time_partitions.existing()
    assert finished_day.date() not in days
    assert {unfinished_day.date(), recent_day.date()} <= set(days)
    left, _ = await store.executions.list(owner.id, job_id=job.id)
    assert [(e.key.scheduled_for, e.status) for e in left] == [
        (recent_day, ExecutionStatus.PENDING),
        (unfinished_day, ExecutionStatus.PENDING),
    ]
    # A write into a dropped day recreates it rather than failing.
    assert await store.occurrences.insert([make.occurrence(job, finished_day)]) == [
        ExecutionKey(job.id, finished_day)
    ]


async def test_a_node_that_missed_a_drop_recreates_the_day(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner)
    old = NOW - timedelta(days=60)
    other_node = Store.over(store.pool)  # its own cache of the days that exist
    await other_node.time_partitions.ensure([old.date()])
    report = await store.time_partitions.maintain(NOW, ahead_days=0, retention_days=30)
    assert old.date() in report.dropped
    inserted = await other_node.occurrences.insert([make.occurrence(job, old)])
    assert inserted == [ExecutionKey(job.id, old)]
