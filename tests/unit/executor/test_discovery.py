"""Registration and discovery through the real etcd: the executor follows the node list."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from tests.unit.executor.fake_node import FakeNode, dispatch
from tests.unit.executor.helpers import Cluster, Gate
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.coordinator.mirror import PrefixMirror
from wheel.coordinator.registry import ExecutorInfo
from wheel.executor.tasks import TaskRegistry

NOT_STARTED = pb.Result.OUTCOME_NOT_STARTED


SERVED = {"default": 2, "slow": 1}
"""The pools these executors serve: the task's own among them, or the executor refuses."""


def registry(gate: Gate) -> TaskRegistry:
    tasks = TaskRegistry()
    tasks.register("block", gate.handler, pool="slow")
    return tasks


async def until(mirror: PrefixMirror, predicate: Callable[[], bool]) -> None:
    """Wait (bounded) until `predicate()` holds, re-checked after each change etcd reports."""

    async def changes() -> None:
        while not predicate():
            await mirror.changed.wait()

    await asyncio.wait_for(changes(), 10)


async def test_the_executor_registers_and_registers_again_after_losing_its_session(
    cluster: Cluster, gate: Gate
) -> None:
    mirror = PrefixMirror(cluster.etcd, cluster.layout.executors)
    await mirror.start()
    try:
        executor = await cluster.executor(
            registry(gate), pools={"default": 2, "slow": 1}, session_ttl_s=1
        )
        assert executor.registration is not None
        key = f"{cluster.layout.executors}{executor.config.executor_id}"
        await until(mirror, lambda: key in mirror.items)
        info = ExecutorInfo.from_kv(mirror.items[key])
        assert (info.pools, info.task_types, info.capacity) == (("default", "slow"), ("block",), 3)
        first_lease = mirror.items[key].lease
        await cluster.etcd.revoke(first_lease)  # as if etcd had let the lease expire
        await until(mirror, lambda: key in mirror.items and mirror.items[key].lease != first_lease)
        await asyncio.wait_for(executor.registration.registered.wait(), 10)
        assert executor.registration.sessions == 2
        await executor.stop()
        await until(mirror, lambda: key not in mirror.items)
    finally:
        await mirror.stop()


async def test_nodes_are_connected_as_they_appear_and_dropped_as_they_go(
    cluster: Cluster, gate: Gate
) -> None:
    executor = await cluster.executor(registry(gate), pools=SERVED)
    assert executor.discovery is not None
    node = await cluster.add_node("n1")
    stream = await node.opened()
    await stream.until(lambda: stream.credit("default") == 2)
    await cluster.unlist_node("n1")
    await asyncio.wait_for(stream.ended.wait(), 10)
    assert "n1" not in executor.discovery.links
    moved = FakeNode("n1")  # the same node id back, at another address
    await moved.start()
    cluster.nodes.append(moved)
    await cluster.list_node("n1", moved.address)
    again = await moved.opened()
    assert again.hello.executor_id == executor.config.executor_id
    assert len(node.streams) == 1, "nothing more went to the old address"


class Reconnects(logging.Handler):
    """Sets `seen` once a link has logged `count` reconnect pauses (log calls run on the loop)."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.left = count
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "link.reconnect":
            self.left -= 1
            if self.left <= 0:
                self.seen.set()


async def test_a_listed_node_that_is_down_is_retried_until_it_answers(
    cluster: Cluster, gate: Gate, caplog: pytest.LogCaptureFixture
) -> None:
    node = await cluster.add_node("n1")
    await node.stop()  # listed, but not listening
    reconnects = Reconnects(3)
    caplog.set_level(logging.INFO, logger="wheel.executor.connection")
    links_log = logging.getLogger("wheel.executor.connection")
    links_log.addHandler(reconnects)
    tasks = TaskRegistry()
    tasks.register("block", gate.handler)  # in default, the only pool this executor serves
    try:
        await cluster.executor(tasks)
        await asyncio.wait_for(reconnects.seen.wait(), 10)
    finally:
        links_log.removeHandler(reconnects)
    await node.start(port=node.port)
    stream = await node.opened()
    sent = stream.dispatch(dispatch("block", pool="slow"))
    result = await stream.result(sent.execution_id)
    assert (result.outcome, result.error[:25]) == (NOT_STARTED, "pool 'slow' is not served")


async def test_an_executor_that_reaches_no_node_says_why_until_it_does(
    cluster: Cluster, gate: Gate, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="wheel.executor.reach")
    executor = await cluster.executor(registry(gate), pools=SERVED, reach_check_s=0.05)
    reach = executor.reach
    assert reach is not None
    await asyncio.wait_for(reach.unreached.wait(), 10)
    said = [r for r in caplog.records if r.getMessage() == "executor.no_node"]
    assert said, "an error, not an idle process"
    assert "check --cluster" in said[0].reason  # type: ignore[attr-defined]
    assert cluster.layout.cluster in said[0].reason  # type: ignore[attr-defined]
    node = await cluster.add_node("n1")
    await node.opened()
    await asyncio.wait_for(reach.reaching.wait(), 10)
    assert not reach.unreached.is_set()


async def test_listed_nodes_that_refuse_the_stream_are_named_as_the_cause(
    cluster: Cluster, gate: Gate, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="wheel.executor.reach")
    await cluster.list_node("gone", "127.0.0.1:1")  # listed, never answers
    executor = await cluster.executor(registry(gate), pools=SERVED, reach_check_s=0.05)
    assert executor.reach is not None
    await asyncio.wait_for(executor.reach.unreached.wait(), 10)
    (said, *_) = [r for r in caplog.records if r.getMessage() == "executor.no_node"]
    assert "none of the 1 listed nodes accepted a stream" in said.reason  # type: ignore[attr-defined]
