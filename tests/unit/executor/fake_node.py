"""A scripted scheduler node: a real grpc.aio server speaking the executor stream.

Tests send it `SchedulerMessage`s and await what the executor sent back
(`until(...)`); it records every stream it was opened, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import grpc
import grpc.aio
from google.protobuf.timestamp_pb2 import Timestamp

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel._proto.wheel.v1 import executor_pb2_grpc as pb_grpc
from wheel.model.ids import ExecutionKey, JobId

WAIT_S = 10.0


def timestamp(instant: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(instant)
    return stamp


def dispatch(
    task_type: str,
    *,
    pool: str = "default",
    fence: int = 1,
    job_id: uuid.UUID | None = None,
    start_in_s: float = 0.0,
    deadline_in_s: float = 30.0,
    payload: bytes = b"",
) -> pb.Dispatch:
    job = JobId(job_id or uuid.uuid4())
    now = datetime.now(UTC)
    start_at = now + timedelta(seconds=start_in_s)
    return pb.Dispatch(
        execution_id=ExecutionKey(job, start_at).id,
        job_id=str(job),
        task_type=task_type,
        pool=pool,
        payload=payload,
        attempt=1,
        fence=fence,
        scheduled_for=timestamp(start_at),
        start_at=timestamp(start_at),
        deadline=timestamp(now + timedelta(seconds=deadline_in_s)),
        lease_until=timestamp(now + timedelta(seconds=60)),
    )


class FakeStream:
    """One executor stream as the node sees it."""

    def __init__(self, node: FakeNode, hello: pb.Hello) -> None:
        self.node = node
        self.hello = hello
        self.received: list[pb.ExecutorMessage] = []
        self.ended = asyncio.Event()
        self._outgoing: asyncio.Queue[pb.SchedulerMessage | None] = asyncio.Queue()
        self._changed = asyncio.Condition()

    # what the node sends

    def send(self, message: pb.SchedulerMessage) -> None:
        self._outgoing.put_nowait(message)

    def dispatch(self, message: pb.Dispatch) -> pb.Dispatch:
        self.send(pb.SchedulerMessage(dispatch=message))
        return message

    def accept(self, execution_id: str, fence: int) -> None:
        accepted = pb.ResultAccepted(execution_id=execution_id, fence=fence)
        self.send(pb.SchedulerMessage(accepted=accepted))

    def stale(self, execution_id: str, fence: int, current_fence: int = 0) -> None:
        stale = pb.StaleFence(execution_id=execution_id, fence=fence, current_fence=current_fence)
        self.send(pb.SchedulerMessage(stale_fence=stale))

    def cancel(self, execution_id: str, fence: int, reason: str) -> None:
        cancel = pb.CancelExecution(execution_id=execution_id, fence=fence, reason=reason)
        self.send(pb.SchedulerMessage(cancel=cancel))

    def close(self) -> None:
        """End the stream from the node's side (status OK): the executor sees EOF."""
        self._outgoing.put_nowait(None)

    # what the executor sent

    def credit(self, pool: str = "default") -> int:
        return sum(m.credit.count for m in self.received
                   if m.WhichOneof("body") == "credit" and m.credit.pool == pool)  # fmt: skip

    def results(self, execution_id: str | None = None) -> list[pb.Result]:
        return [m.result for m in self.received if m.WhichOneof("body") == "result"
                and execution_id in (None, m.result.execution_id)]  # fmt: skip

    def heartbeats(self, execution_id: str | None = None) -> list[pb.Heartbeat]:
        return [m.heartbeat for m in self.received if m.WhichOneof("body") == "heartbeat"
                and execution_id in (None, m.heartbeat.execution_id)]  # fmt: skip

    async def until(self, predicate: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
        """Wait until `predicate()` holds, re-checked after every message from the executor."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout_s)

    async def result(self, execution_id: str, timeout_s: float = WAIT_S) -> pb.Result:
        await self.until(lambda: bool(self.results(execution_id)), timeout_s)
        return self.results(execution_id)[0]

    async def _read(self, messages: AsyncIterator[pb.ExecutorMessage]) -> None:
        async for batched in messages:
            for message in _unbatched(batched):
                self.received.append(message)
                if self.node.auto_ack and message.WhichOneof("body") == "result":
                    self.accept(message.result.execution_id, message.result.fence)
            async with self._changed:
                self._changed.notify_all()


def _unbatched(message: pb.ExecutorMessage) -> list[pb.ExecutorMessage]:
    """Batched results and heartbeats as the single messages they carry (tests look at those)."""
    kind = message.WhichOneof("body")
    if kind == "results":
        return [pb.ExecutorMessage(result=r) for r in message.results.results]
    if kind == "heartbeats":
        return [pb.ExecutorMessage(heartbeat=h) for h in message.heartbeats.heartbeats]
    return [message]


class FakeNode(pb_grpc.ExecutorStreamServicer):
    def __init__(
        self, node_id: str, *, heartbeat_interval_ms: int = 50, auto_ack: bool = False
    ) -> None:
        self.node_id = node_id
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.auto_ack = auto_ack
        self.streams: list[FakeStream] = []
        self._opened: asyncio.Queue[FakeStream] = asyncio.Queue()
        self._server: grpc.aio.Server | None = None
        self.port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self, port: int = 0) -> str:
        server = grpc.aio.server()
        pb_grpc.add_ExecutorStreamServicer_to_server(self, server)
        self.port = server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        self._server = server
        return self.address

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(grace=None)
            self._server = None

    async def opened(self, timeout_s: float = WAIT_S) -> FakeStream:
        """The next stream the executor opens (after its Hello)."""
        return await asyncio.wait_for(self._opened.get(), timeout_s)

    async def Connect(  # type: ignore[override]
        self,
        request_iterator: AsyncIterator[pb.ExecutorMessage],
        context: grpc.aio.ServicerContext[pb.ExecutorMessage, pb.SchedulerMessage],
    ) -> AsyncIterator[pb.SchedulerMessage]:
        first = await anext(aiter(request_iterator))
        assert first.WhichOneof("body") == "hello", first
        stream = FakeStream(self, first.hello)
        self.streams.append(stream)
        reader = asyncio.create_task(stream._read(request_iterator))
        try:
            welcome = pb.Welcome(
                node_id=self.node_id, heartbeat_interval_ms=self.heartbeat_interval_ms
            )
            yield pb.SchedulerMessage(welcome=welcome)
            self._opened.put_nowait(stream)
            while (message := await stream._outgoing.get()) is not None:
                yield message
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await reader
            stream.ended.set()
