"""Engine bookkeeping that needs no database: links by task type, breaker parking, errors."""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from unittest.mock import MagicMock

import pytest

from tests.unit.scheduler.test_ready import A, item
from wheel.errors import Conflict
from wheel.model.executions import AttemptResult, DueOccurrence, Outcome
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.engine import Engine, InFlight
from wheel.scheduler.links import Links
from wheel.scheduler.messages import NOT_YOURS, Hello
from wheel.scheduler.messages import clean_error as _clean_error


def engine() -> Engine:
    config = SchedulerConfig(node_id="n", postgres_dsn="postgresql://x", etcd_endpoint="e:1",
                             breaker_failures=1, breaker_cooldown_s=0.001)  # fmt: skip
    return Engine(config, MagicMock(name="store"), Links())


def hello(executor_id: str, task_types: tuple[str, ...] = ("report",), **fields: Any) -> Hello:
    settings: dict[str, Any] = {"pools": ("default",), "capacity": 10, "instance_id": "i1"}
    settings.update(fields)
    return Hello(executor_id, task_types=task_types, **settings)


TOKEN = uuid.uuid4()


def test_dispatches_go_only_to_executors_with_the_task() -> None:
    links = Links()
    without = links.connect(hello("old", ("report",)), TOKEN)
    with_it = links.connect(hello("new", ("report", "resize")), TOKEN)
    links.grant(without, "default", 5)
    links.grant(with_it, "default", 1)
    assert links.take("default", "resize") is with_it
    assert links.take("default", "resize") is None, "the only capable executor has no credit"
    assert links.take("default", "report") is without


def test_one_executor_id_is_one_process() -> None:
    links = Links()
    first = links.connect(hello("ex", instance_id="a"), TOKEN)
    with pytest.raises(Conflict, match="another process"):
        links.connect(hello("ex", instance_id="b"), TOKEN)
    with pytest.raises(Conflict):
        links.connect(hello("ex", instance_id="a"), uuid.uuid4())  # another token
    assert first.open
    again = links.connect(hello("ex", instance_id="a"), TOKEN)  # the same process reconnecting
    assert not first.open
    assert again.open
    assert len(links) == 1


async def test_a_run_no_connected_executor_serves_is_never_claimed() -> None:
    e = engine()
    e.own(PartitionId(3), 1)
    store = cast(MagicMock, e._store)
    link = e.links.connect(hello("ex", ("report",)), TOKEN)
    e.links.grant(link, "default", 10)
    due = _waiting_runs(uuid.uuid4(), 1, task_type="exmaple.hello", overlap="allow")[0]
    e.add_due([due])
    e.ready.push(e.known[due.key])  # fired (the wheel is not running here)
    e._next_round()
    store.occurrences.claim_batch.assert_not_called()
    assert [r.key for r in e.unserved[("default", "exmaple.hello")]] == [due.key]
    assert link.credits["default"] == 10, "no credit was used"
    # An executor that runs it connects: the run goes back to be claimed.
    e.links.connect(hello("other", ("exmaple.hello",)), TOKEN)
    e._serve_waiting()
    assert e.unserved == {}
    assert [r.key for r in e.ready] == [due.key]


async def test_nothing_is_claimed_while_results_wait_to_be_recorded() -> None:
    e = engine()
    e.own(PartitionId(3), 1)
    store = cast(MagicMock, e._store)
    link = e.links.connect(hello("ex", ("report",)), TOKEN)
    e.links.grant(link, "default", 10)
    due = _waiting_runs(uuid.uuid4(), 1, overlap="allow")[0]
    e.add_due([due])
    e.ready.push(e.known[due.key])
    e._results = cast(Any, [None] * (4 * e.config.record_batch + 1))  # a record backlog
    e._next_round()
    store.occurrences.claim_batch.assert_not_called()
    assert [r.key for r in e.ready] == [due.key], "it waits, unclaimed"
    assert e.pressure()["results_waiting"] == 4 * e.config.record_batch + 1
    e._results = cast(Any, [])  # recorded
    spawned: list[Any] = []
    e._spawn = lambda claim: spawned.append(claim.close())  # type: ignore[method-assign]
    e._next_round()
    assert e._claims_running == 1, "then it is claimed"
    assert len(spawned) == 1


async def test_a_result_for_a_run_handed_to_another_executor_is_refused_at_once() -> None:
    e = engine()
    e.start()
    owner = e.links.connect(hello("owner"), TOKEN)
    intruder = e.links.connect(hello("intruder", instance_id="x"), TOKEN)
    key = _waiting_runs(uuid.uuid4(), 1)[0].key
    e.in_flight[key] = InFlight(item(A, 1, partition=3), 7, owner, 0.0)
    e.report(intruder, AttemptResult(key, 7, Outcome.SUCCEEDED))
    refused = intruder.outbox.get_nowait()
    assert refused is not None
    assert refused.stale_fence.reason == NOT_YOURS
    assert refused.stale_fence.current_fence == 0, "nothing about the run is told"
    assert e.stats.refused["result.not_yours"] == 1
    assert key in e.in_flight, "the owner's run is untouched"
    await e.stop()


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


def _waiting_runs(
    job: uuid.UUID, count: int, *, task_type: str = "report", overlap: str = "wait"
) -> list[DueOccurrence]:
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
            task_type=task_type,
            overlap=overlap,
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
        assert e._queue_behind(head) is None, "it waits"
    assert [r.key for r in e.blocked[JobId(job)]] == [r.key for r in runs[1:]]


async def test_policy_queue_keeps_the_earliest_occurrence_however_the_claims_interleave() -> None:
    e = engine()
    e.own(PartitionId(3), 1)
    job = uuid.uuid4()
    second, third = _waiting_runs(job, 2, overlap="queue")
    e.add_due([second, third])
    queued, later = e.known[second.key], e.known[third.key]
    assert e._queue_behind(queued) is None, "the first blocked one waits"
    e.retry_blocked()  # the catch-up lets it try again; a later one is blocked meanwhile
    assert e._queue_behind(later) is None
    assert e._queue_behind(queued) is later, "the earlier one takes its place back"
    assert [r.key for r in e.blocked[JobId(job)]] == [second.key]
    assert third.key not in e.known
    assert second.key in e.known
    e.add_due([third])
    again = e.known[third.key]
    assert e._queue_behind(again) is again, "a later one blocked behind the queued is skipped"
    assert [r.key for r in e.blocked[JobId(job)]] == [second.key]


def test_an_unresponsive_executor_gets_nothing_until_it_speaks() -> None:
    links = Links()
    frozen = links.connect(hello("frozen"), TOKEN)
    alive = links.connect(hello("alive", instance_id="i2"), TOKEN)
    for link in (frozen, alive):
        links.grant(link, "default", 10)
    frozen.unresponsive = True  # a lease it held lapsed
    assert {links.take("default", "report") for _ in range(4)} == {alive}
    links.heard(frozen)
    assert frozen in {links.take("default", "report") for _ in range(4)}


def test_the_stats_a_node_logs_are_plain_json() -> None:
    e = engine()
    e.stats.count_refused("result.not_yours")
    e.stats.count_refused("heartbeat.refused", 3)
    document = {**dataclasses.asdict(e.stats), **e.pressure()}
    assert json.loads(json.dumps(document))["refused"] == {
        "result.not_yours": 1,
        "heartbeat.refused": 3,
    }
