"""Engine bookkeeping that needs no database: links by task type, breaker parking, errors."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from unittest.mock import MagicMock

from tests.unit.scheduler.test_ready import A, item
from wheel.model.executions import DueOccurrence
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.engine import Engine, _clean_error
from wheel.scheduler.links import Links


def engine() -> Engine:
    config = SchedulerConfig(node_id="n", postgres_dsn="postgresql://x", etcd_endpoint="e:1",
                             breaker_failures=1, breaker_cooldown_s=0.001)  # fmt: skip
    return Engine(config, MagicMock(name="store"), Links())


def test_dispatches_go_only_to_executors_with_the_task() -> None:
    links = Links()
    without = links.connect("old", ("default",), ("report",), 10)
    with_it = links.connect("new", ("default",), ("report", "resize"), 10)
    links.grant(without, "default", 5)
    links.grant(with_it, "default", 1)
    assert links.take("default", "resize") is with_it
    assert links.take("default", "resize") is None, "the only capable executor has no credit"
    assert links.take("default", "report") is without


async def test_releasing_the_partition_of_every_parked_item_leaves_nothing_to_probe() -> None:
    e = engine()
    e.own(PartitionId(3), 1)
    parked = item(A, 1, partition=3)
    e.breakers.record(parked.task_type, False, 0.0)  # open
    e.parked[parked.task_type].append(parked)
    e.release(PartitionId(3))
    assert dict(e.parked) == {}
    e._unpark()  # the cool-down is over: nothing to send, nothing to fail on
    assert len(e.ready) == 0


def test_error_texts_lose_nul_bytes_and_are_bounded() -> None:
    assert _clean_error("bad\x00byte") == "bad\\0byte"
    assert _clean_error("") is None
    assert len(_clean_error("x" * 100_000) or "") == 8192


def _waiting_runs(job: uuid.UUID, count: int) -> list[DueOccurrence]:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    return [
        DueOccurrence(
            key=ExecutionKey(JobId(job), start + timedelta(hours=n)),
            partition=PartitionId(3),
            fire_at=datetime.now(UTC),
            priority=0,
            job_version=1,
            tenant_id=TenantId(uuid.uuid4()),
            pool="default",
            task_type="report",
            overlap="wait",
        )
        for n in range(count)
    ]


async def test_a_backfill_puts_one_run_in_the_wheel_and_the_rest_behind_it() -> None:
    e = engine()
    e.own(PartitionId(3), 1)
    job = uuid.uuid4()
    runs = _waiting_runs(job, 1000)
    assert e.add_due(runs[:600]) == 1
    assert e.add_due(runs[600:]) == 0, "a later page goes behind the first too"
    waiting = e.blocked[JobId(job)]
    assert [r.key for r in waiting] == [r.key for r in runs[1:]], "in their order"
    e.release_blocked(JobId(job))  # the first one finished: the next may go
    assert [r.key for r in e.blocked[JobId(job)]] == [r.key for r in runs[2:]]
    assert len(e.ready) == 1
    e.release(PartitionId(3))
    assert e.blocked == {}
    assert e.known == {}


async def test_a_waiting_run_blocked_again_keeps_its_place_at_the_front() -> None:
    e = engine()
    e.own(PartitionId(3), 1)
    job = uuid.uuid4()
    runs = _waiting_runs(job, 4)
    e.add_due(runs)
    for _ in range(3):  # the catch-up's retries release the first, and it is blocked again
        e.retry_blocked()
        head = e.known[runs[1].key]
        e.ready.take("default", 10, lambda tenant: 10)
        assert e._queue_behind(head)
    assert [r.key for r in e.blocked[JobId(job)]] == [r.key for r in runs[1:]]
