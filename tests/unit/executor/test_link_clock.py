"""An executor's link to one node on a manual clock: heartbeats every interval, a silent
node's stream ended, and the reconnect backoff, with no waiting on time.

The node is the scripted gRPC node of these tests (real loopback I/O); what the link
reports to is a small stand-in for `Executions` that keeps one run's lease. The link
waits on a `ManualClock`, which moves only when a test advances it; what the node
received is awaited as messages, never as time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from tests.unit.executor.fake_node import FakeNode
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.executor.connection import SILENT_INTERVALS, Identity, NodeLink, Stream
from wheel.executor.messages import Dispatch, MalformedDispatch
from wheel.timingwheel import ManualClock

INTERVAL_MS = 2000
KEPT = ("run-1", 4)
"""The one run whose lease the executor keeps."""


class _Handler:
    """What the link reports to: every stream up and down, and each heartbeat asked."""

    def __init__(self) -> None:
        self.asked = 0
        self.up: list[Stream] = []
        self.down: list[Stream] = []

    def stream_up(self, stream: Stream) -> None:
        self.up.append(stream)

    def stream_down(self, stream: Stream) -> None:
        self.down.append(stream)

    def on_dispatch(self, stream: Stream, dispatch: Dispatch) -> None: ...
    def on_malformed_dispatch(self, stream: Stream, malformed: MalformedDispatch) -> None: ...
    def on_cancel(self, execution_id: str, fence: int, reason: str) -> None: ...
    def on_stale_fence(self, execution_id: str, fence: int, current_fence: int) -> None: ...
    def on_accepted(self, execution_id: str, fence: int) -> None: ...

    def heartbeats_for(self, stream: Stream) -> list[tuple[str, int]]:
        self.asked += 1
        return [KEPT]


@contextlib.asynccontextmanager
async def _linked(clock: ManualClock) -> AsyncIterator[tuple[FakeNode, NodeLink, _Handler]]:
    node = FakeNode("n1", heartbeat_interval_ms=INTERVAL_MS)  # type: ignore[abstract]
    await node.start()
    handler = _Handler()
    link = NodeLink(
        "n1", node.address, Identity("ex", ("default",), ("t",), 1), handler,
        backoff_min_s=1.0, backoff_max_s=8.0, jitter=lambda: 1.0,
        clock=lambda: clock.monotonic_ms() / 1000, alarm=clock,
    )  # fmt: skip
    running = asyncio.create_task(link.run())
    try:
        yield node, link, handler
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await node.stop()


async def _until(predicate: Callable[[], bool]) -> None:
    """Let the loop (and the loopback I/O) run until `predicate` holds; no clock moves."""
    async with asyncio.timeout(10):
        while not predicate():  # noqa: ASYNC110  # nothing to await: alarms armed, bytes read
            await asyncio.sleep(0)


def _armed_at(clock: ManualClock, due_ms: int) -> Callable[[], bool]:
    """The link waits on one alarm, due at `due_ms`."""
    return lambda: clock.pending_alarms() == [due_ms]


def _asked(handler: _Handler, times: int) -> Callable[[], bool]:
    return lambda: handler.asked == times


async def test_what_the_executor_keeps_is_heartbeated_every_interval() -> None:
    clock = ManualClock()
    async with _linked(clock) as (node, _, handler):
        stream = await node.opened()
        for beats in (1, 2, 3):
            await _until(_armed_at(clock, beats * INTERVAL_MS))
            clock.advance(INTERVAL_MS - 1)
            assert handler.asked == beats - 1, "not before the interval"
            clock.advance(1)
            await _until(_asked(handler, beats))
            await stream.until(lambda: len(stream.heartbeats()) == handler.asked)
            assert [(h.execution_id, h.fence) for h in stream.heartbeats()][-1] == KEPT


async def test_a_pinging_node_gone_silent_is_left_and_dialled_again_after_a_backoff() -> None:
    clock = ManualClock()
    async with _linked(clock) as (node, link, handler):
        first = await node.opened()
        first.send(pb.SchedulerMessage(ping=pb.Ping(nonce=1)))
        await first.until(lambda: any(m.WhichOneof("body") == "pong" for m in first.received))
        for tick in range(1, SILENT_INTERVALS + 1):  # silent for exactly the limit: not yet
            await _until(_armed_at(clock, tick * INTERVAL_MS))
            clock.advance(INTERVAL_MS)
            await _until(_asked(handler, tick))
        assert handler.down == [], "silent for the limit, not more: still up"
        await _until(_armed_at(clock, (SILENT_INTERVALS + 1) * INTERVAL_MS))
        clock.advance(INTERVAL_MS)
        await _until(lambda: handler.down == handler.up)
        assert link.stream is None, "silent for longer: the stream is ended"
        reconnect_at = (SILENT_INTERVALS + 1) * INTERVAL_MS + 1000
        await _until(_armed_at(clock, reconnect_at))
        clock.advance(999)
        assert link.welcomes == 1, "not before its backoff"
        clock.advance(1)
        second = await node.opened()
        assert second is not first
        await _until(lambda: link.welcomes == 2)
        second.close()  # and that stream ends too: it was welcomed, so the backoff starts over
        await _until(lambda: len(handler.down) == 2)
        await _until(_armed_at(clock, clock.monotonic_ms() + 1000))


async def test_each_failed_dial_doubles_the_wait_before_the_next_up_to_its_cap() -> None:
    clock = ManualClock()
    async with _linked(clock) as (node, link, handler):
        await node.opened()
        await node.stop()  # the node goes away: every dial from now on fails
        await _until(lambda: handler.down == handler.up)
        for wait_ms in (1000, 2000, 4000, 8000, 8000):
            await _until(_armed_at(clock, clock.monotonic_ms() + wait_ms))
            clock.advance(wait_ms)
        assert link.welcomes == 1
