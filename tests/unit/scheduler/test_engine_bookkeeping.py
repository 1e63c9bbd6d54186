"""Engine bookkeeping that needs no database: links by task type, breaker parking, errors."""

from __future__ import annotations

from unittest.mock import MagicMock

from tests.unit.scheduler.test_ready import A, item
from wheel.model.ids import PartitionId
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
