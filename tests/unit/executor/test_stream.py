"""The executor stream against a scripted node: hello, credit, heartbeats, results, drain."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from tests.unit.executor.fake_node import dispatch
from tests.unit.executor.helpers import Cluster, Gate, registry
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.executor.connection import Stream
from wheel.executor.context import TaskContext
from wheel.executor.messages import Outcome, Report
from wheel.model.ids import ExecutionId

SUCCEEDED = pb.Result.OUTCOME_SUCCEEDED
FAILED = pb.Result.OUTCOME_FAILED
NOT_STARTED = pb.Result.OUTCOME_NOT_STARTED


async def test_hello_then_welcome_then_each_pools_credit(cluster: Cluster, gate: Gate) -> None:
    node = await cluster.add_node("n1")
    executor = await cluster.executor(registry(gate), pools={"default": 3, "slow": 1})
    stream = await node.opened()
    assert stream.hello.executor_id == executor.config.executor_id
    assert (list(stream.hello.pools), list(stream.hello.task_types), stream.hello.capacity) == (
        ["default", "slow"],
        ["block", "noop"],
        4,
    )
    await stream.until(lambda: stream.credit("default") == 3 and stream.credit("slow") == 1)
    sent = stream.dispatch(dispatch("noop"))
    result = await stream.result(sent.execution_id)
    assert (result.outcome, result.fence, result.error) == (SUCCEEDED, 1, "")
    assert result.HasField("started_at")
    assert result.started_at.ToDatetime() >= sent.start_at.ToDatetime()
    await stream.until(lambda: stream.credit("default") == 4)  # one back for the one used


async def test_credit_is_bounded_per_stream_and_excess_waits_in_start_at_order(
    cluster: Cluster, gate: Gate
) -> None:
    a, b = await cluster.add_node("a"), await cluster.add_node("b")
    await cluster.executor(registry(gate), pools={"default": 2})
    on_a, on_b = await a.opened(), await b.opened()
    await on_a.until(lambda: on_a.credit() == 2)
    await on_b.until(lambda: on_b.credit() == 2)
    x1, x2 = on_a.dispatch(dispatch("block")), on_a.dispatch(dispatch("block"))
    assert {await gate.next_started(), await gate.next_started()} == {
        x1.execution_id,
        x2.execution_id,
    }
    # b holds credit too, but the pool is full: these wait, the earlier start_at first.
    later = on_b.dispatch(dispatch("block", start_in_s=-1))
    earlier = on_b.dispatch(dispatch("block", start_in_s=-2))
    for waiting in (later, earlier):
        await on_b.until(lambda w=waiting: len(on_b.heartbeats(w.execution_id)) >= 2)
    assert gate.started.empty(), "nothing starts beyond the pool's concurrency"
    assert (on_a.credit(), on_b.credit()) == (2, 2), "no credit back before anything finishes"
    gate.release(x1.execution_id)
    assert await gate.next_started() == earlier.execution_id
    await on_a.until(lambda: on_a.credit() == 3)  # back to the stream x1 came on
    gate.release(x2.execution_id)
    assert await gate.next_started() == later.execution_id
    await on_a.until(lambda: on_a.credit() == 4)
    for sent in (earlier, later):
        gate.release(sent.execution_id)
        assert (await on_b.result(sent.execution_id)).outcome == SUCCEEDED
    await on_b.until(lambda: on_b.credit() == 4)
    results = {r.execution_id for r in on_a.results()}
    assert results == {x1.execution_id, x2.execution_id}


async def test_heartbeats_come_every_interval_and_at_once_on_demand(
    cluster: Cluster, gate: Gate
) -> None:
    ticking = await cluster.add_node("ticking", heartbeat_interval_ms=20)
    quiet = await cluster.add_node("quiet", heartbeat_interval_ms=3_600_000)
    tasks = registry(gate)

    def on_demand(ctx: TaskContext) -> None:  # a sync handler, on a worker thread
        ctx.heartbeat()
        ctx.cancel_event.wait(30)

    tasks.register("on_demand", on_demand)
    await cluster.executor(tasks)
    on_ticking, on_quiet = await ticking.opened(), await quiet.opened()
    blocked = on_ticking.dispatch(dispatch("block", fence=4))
    await on_ticking.until(lambda: len(on_ticking.heartbeats(blocked.execution_id)) >= 3)
    assert {h.fence for h in on_ticking.heartbeats(blocked.execution_id)} == {4}
    asked = on_quiet.dispatch(dispatch("on_demand", fence=9))
    await on_quiet.until(lambda: bool(on_quiet.heartbeats(asked.execution_id)))
    assert on_quiet.heartbeats(asked.execution_id)[0].fence == 9
    on_quiet.cancel(asked.execution_id, 9, "test over")
    assert (await on_quiet.result(asked.execution_id)).outcome == FAILED
    gate.release(blocked.execution_id)
    await on_ticking.result(blocked.execution_id)


async def test_stale_fence_cancels_a_running_handler_and_no_result_is_sent(
    cluster: Cluster, gate: Gate
) -> None:
    node = await cluster.add_node("n1")
    executor = await cluster.executor(registry(gate))
    stream = await node.opened()
    await stream.until(lambda: stream.credit() == 2)
    sent = stream.dispatch(dispatch("block", fence=5))
    assert await gate.next_started() == sent.execution_id
    stream.stale(sent.execution_id, fence=4)  # not this attempt's fence: ignored
    stream.stale(sent.execution_id, fence=5, current_fence=6)
    await stream.until(lambda: stream.credit() == 3)  # the credit comes back after the end...
    assert gate.cancelled == {sent.execution_id}
    assert stream.results() == [], "...and no result went before it"
    assert executor.outbox is not None
    assert len(executor.outbox) == 0


async def test_cancel_execution_reports_failed_cancelled(cluster: Cluster, gate: Gate) -> None:
    node = await cluster.add_node("n1")
    await cluster.executor(registry(gate))
    stream = await node.opened()
    running = stream.dispatch(dispatch("block", fence=2))
    waiting = stream.dispatch(dispatch("block", fence=2, start_in_s=3600))
    assert await gate.next_started() == running.execution_id
    for sent in (running, waiting):
        stream.cancel(sent.execution_id, 2, "job deleted")
    first, second = (
        await stream.result(running.execution_id),
        await stream.result(waiting.execution_id),
    )
    assert (first.outcome, first.error) == (FAILED, "cancelled: job deleted")
    assert first.HasField("started_at")
    assert (second.outcome, second.error) == (FAILED, "cancelled: job deleted")
    assert not second.HasField("started_at")
    assert gate.cancelled == {running.execution_id}


async def test_unknown_task_type_fails_naming_it(cluster: Cluster, gate: Gate) -> None:
    node = await cluster.add_node("n1")
    await cluster.executor(registry(gate))
    stream = await node.opened()
    sent = stream.dispatch(dispatch("send_invoice"))
    result = await stream.result(sent.execution_id)
    assert result.outcome == FAILED
    assert result.error.startswith("unknown task type 'send_invoice'")
    await stream.until(lambda: stream.credit() == 3)


async def test_an_unacknowledged_result_is_resent_on_reconnect_until_accepted(
    cluster: Cluster, gate: Gate
) -> None:
    node = await cluster.add_node("n1")
    executor = await cluster.executor(registry(gate))
    assert executor.outbox is not None
    first = await node.opened()
    sent = first.dispatch(dispatch("noop", fence=3))
    await first.result(sent.execution_id)
    await node.stop()  # the node restarts: the stream breaks with the result unacknowledged
    await node.start(port=node.port)
    second = await node.opened()
    resent = await second.result(sent.execution_id)
    assert (resent.execution_id, resent.fence, resent.outcome) == (sent.execution_id, 3, SUCCEEDED)
    second.accept(sent.execution_id, 3)
    await asyncio.wait_for(executor.outbox.flushed(), 10)
    second.close()  # once more: an accepted result is not sent again
    third = await node.opened()
    probe = third.dispatch(dispatch("noop"))
    await third.result(probe.execution_id)
    assert third.results(sent.execution_id) == []


async def test_a_stale_fence_drops_a_buffered_result(cluster: Cluster, gate: Gate) -> None:
    node = await cluster.add_node("n1")
    executor = await cluster.executor(registry(gate))
    assert executor.outbox is not None
    first = await node.opened()
    sent = first.dispatch(dispatch("noop", fence=3))
    await first.result(sent.execution_id)
    first.stale(sent.execution_id, 3, current_fence=4)
    await asyncio.wait_for(executor.outbox.flushed(), 10)
    first.close()
    second = await node.opened()
    probe = second.dispatch(dispatch("noop"))
    await second.result(probe.execution_id)
    assert second.results(sent.execution_id) == []


async def test_a_result_whose_stream_broke_goes_to_the_partition_owner(
    cluster: Cluster, gate: Gate
) -> None:
    nodes = {name: await cluster.add_node(name) for name in ("a", "b", "c")}
    sent = dispatch("block", fence=7)
    await cluster.set_owner(1, 0, "c")  # one partition: every job's, owned by c
    executor = await cluster.executor(registry(gate))
    streams = {name: await node.opened() for name, node in nodes.items()}
    await streams["c"].until(lambda: streams["c"].credit() == 2)
    streams["a"].dispatch(sent)
    assert await gate.next_started() == sent.execution_id
    await cluster.unlist_node("a")  # a leaves: its stream is dropped while the handler runs
    await asyncio.wait_for(streams["a"].ended.wait(), 10)
    gate.release(sent.execution_id)
    result = await streams["c"].result(sent.execution_id)
    assert (result.fence, result.outcome) == (7, SUCCEEDED)
    assert streams["b"].results() == [], "b is up, but c owns the partition"
    streams["c"].accept(sent.execution_id, 7)
    assert executor.outbox is not None
    await asyncio.wait_for(executor.outbox.flushed(), 10)


async def test_drain_answers_waiting_not_started_and_lets_running_finish(
    cluster: Cluster, gate: Gate
) -> None:
    node = await cluster.add_node("n1", auto_ack=True)
    executor = await cluster.executor(registry(gate), pools={"default": 1})
    stream = await node.opened()
    running = stream.dispatch(dispatch("block"))
    queued = stream.dispatch(dispatch("block"))  # no free slot
    future = stream.dispatch(dispatch("block", start_in_s=3600))
    assert await gate.next_started() == running.execution_id
    await stream.until(lambda: len(stream.heartbeats(queued.execution_id)) >= 1)
    credit_before = stream.credit()
    stopping = asyncio.create_task(executor.stop())
    for waiting in (queued, future):
        result = await stream.result(waiting.execution_id)
        assert (result.outcome, result.error) == (NOT_STARTED, "executor shutting down")
    assert not stopping.done(), "the running handler still has its drain time"
    late = stream.dispatch(dispatch("noop"))
    assert (await stream.result(late.execution_id)).outcome == NOT_STARTED
    gate.release(running.execution_id)
    assert (await stream.result(running.execution_id)).outcome == SUCCEEDED
    await asyncio.wait_for(stopping, 10)
    assert stream.credit() == credit_before, "no credit while draining"
    assert gate.order == [running.execution_id]
    key = f"{cluster.layout.executors}{executor.config.executor_id}"
    assert await cluster.etcd.get(key) is None, "the session is revoked"


async def test_drain_timeout_cancels_running_handlers(cluster: Cluster, gate: Gate) -> None:
    node = await cluster.add_node("n1", auto_ack=True)
    executor = await cluster.executor(registry(gate), drain_timeout_s=0.2)
    stream = await node.opened()
    running = stream.dispatch(dispatch("block"))
    assert await gate.next_started() == running.execution_id
    await asyncio.wait_for(executor.stop(), 10)
    result = await stream.result(running.execution_id)
    assert (result.outcome, result.error) == (FAILED, "executor shutting down")
    assert gate.cancelled == {running.execution_id}


async def test_what_piles_up_goes_as_few_messages_results_before_credit() -> None:
    stream = Stream("n1", "n1", 1.0)

    def report(execution_id: str) -> Report:
        return Report(ExecutionId(execution_id), 1, None, Outcome.SUCCEEDED, "", None,
                      datetime.now(UTC))  # fmt: skip

    stream.send_report(report("a"))
    stream.grant("default", 1)
    stream.send_report(report("b"))
    stream.grant("default", 1)
    stream.send_heartbeat("c", 3)
    out = await stream.next_messages()
    assert out is not None
    assert [m.WhichOneof("body") for m in out] == ["results", "heartbeats", "credit"]
    assert [r.execution_id for r in out[0].results.results] == ["a", "b"]
    assert out[2].credit.count == 2, "credit summed per pool"
    assert stream.credit == {"default": 2}
    stream.grant("default", 1)
    stream.close()
    assert not stream.send_report(report("d")), "a closed stream takes nothing more"
    assert [m.WhichOneof("body") for m in await stream.next_messages() or []] == ["credit"]
    assert await stream.next_messages() is None, "closed and flushed: the writer stops"
