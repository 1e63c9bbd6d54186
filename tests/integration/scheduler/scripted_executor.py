"""A scripted executor for node tests: speaks the stream protocol, runs a behaviour per dispatch.

It is the node's collaborator here (the real executor has its own tests);
it records when each dispatch started so tests can measure lateness.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel._proto.wheel.v1 import executor_pb2_grpc as pb_grpc
from wheel.scheduler.node import SchedulerNode

STARTED: list[ScriptedExecutor] = []
"""Every scripted executor started: the suite's fixture stops those a test left running."""

Behaviour = Callable[[pb.Dispatch], Awaitable[tuple[int, str]]]
"""Returns (Result.Outcome, error)."""


async def succeed(_: pb.Dispatch) -> tuple[int, str]:
    return pb.Result.OUTCOME_SUCCEEDED, ""


async def fail(_: pb.Dispatch) -> tuple[int, str]:
    return pb.Result.OUTCOME_FAILED, "RuntimeError: boom"


def _stamp(instant: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(instant)
    return stamp


@dataclass
class Run:
    execution_id: str
    fence: int
    attempt: int
    scheduled_for: datetime
    start_at: datetime
    started: datetime


@dataclass
class ScriptedExecutor:
    address: str
    executor_id: str = "scripted"
    pool: str = "default"
    task_types: tuple[str, ...] = ()
    """What its Hello says it runs (empty: any task type)."""
    capacity: int = 100
    behaviour: Behaviour = succeed
    runs: list[Run] = field(default_factory=list)
    accepted: list[tuple[str, int]] = field(default_factory=list)
    stale: list[tuple[str, int]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    send_results: bool = True
    heartbeat_every_s: float | None = 0.5
    """Heartbeat running dispatches this often (None: never, like a frozen executor)."""
    token: str = ""
    """The executor token the node requires (`connected` makes one)."""
    instance_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """This process's Hello instance id: the runs dispatched to it are bound to it."""
    refusals: list[pb.StaleFence] = field(default_factory=list)
    """Every refusal the node sent, with its reason."""
    ended: grpc.aio.AioRpcError | None = None
    """How the node ended the stream, if it did."""
    answers_pings: bool = True
    """Answer the node's pings (False: like a frozen executor, or one that predates them)."""
    pings: int = 0
    """Pings the node sent."""
    _outbox: asyncio.Queue[pb.ExecutorMessage | None] = field(default_factory=asyncio.Queue)
    _task: asyncio.Task[None] | None = None
    _channel: grpc.aio.Channel | None = None
    _running: set[asyncio.Task[None]] = field(default_factory=set)
    _requests: AsyncGenerator[pb.ExecutorMessage, None] | None = None

    async def start(self) -> None:
        STARTED.append(self)
        self._channel = grpc.aio.insecure_channel(self.address)
        stub = pb_grpc.ExecutorStreamStub(self._channel)
        self._outbox.put_nowait(
            pb.ExecutorMessage(
                hello=pb.Hello(
                    executor_id=self.executor_id,
                    pools=[self.pool],
                    task_types=list(self.task_types),
                    capacity=self.capacity,
                    instance_id=self.instance_id,
                )
            )
        )
        self._outbox.put_nowait(
            pb.ExecutorMessage(credit=pb.Credit(pool=self.pool, count=self.capacity))
        )
        metadata = (("authorization", f"Bearer {self.token}"),)
        self._requests = self._messages()
        call = stub.Connect(self._requests, metadata=metadata)
        self._task = asyncio.create_task(self._receive(call))

    async def _messages(self) -> AsyncGenerator[pb.ExecutorMessage, None]:
        while True:
            message = await self._outbox.get()
            if message is None:
                return
            yield message

    async def _receive(self, call: grpc.aio.StreamStreamCall) -> None:  # type: ignore[type-arg]
        try:
            await self._receive_all(call)
        except grpc.aio.AioRpcError as exc:
            self.ended = exc
        finally:
            self.changed.set()

    async def _receive_all(self, call: grpc.aio.StreamStreamCall) -> None:  # type: ignore[type-arg]
        async for message in call:
            body = message.WhichOneof("body")
            dispatches = []
            if body == "dispatch":
                dispatches = [message.dispatch]
            elif body == "dispatches":
                dispatches = list(message.dispatches.dispatches)
            elif body == "accepted":
                self.accepted.append((message.accepted.execution_id, message.accepted.fence))
            elif body == "stale_fence":
                stale = message.stale_fence
                self.stale.append((stale.execution_id, stale.fence))
                self.refusals.append(stale)
            elif body == "acknowledgements":
                acks = message.acknowledgements
                self.accepted.extend((a.execution_id, a.fence) for a in acks.accepted)
                self.stale.extend((s.execution_id, s.fence) for s in acks.stale)
                self.refusals.extend(acks.stale)
            elif body == "ping":
                self.pings += 1
                if self.answers_pings:
                    pong = pb.Pong(nonce=message.ping.nonce)
                    self._outbox.put_nowait(pb.ExecutorMessage(pong=pong))
            for dispatch in dispatches:
                task = asyncio.create_task(self._run(dispatch))
                self._running.add(task)
                task.add_done_callback(self._running.discard)
            self.changed.set()

    async def _run(self, dispatch: pb.Dispatch) -> None:
        start_at = dispatch.start_at.ToDatetime(UTC)
        # The protocol: never start before start_at. A loop timer may fire up to its
        # resolution (1 ms under uvloop) early: check the wall clock again.
        while True:
            delay = (start_at - datetime.now(UTC)).total_seconds()
            if delay <= 0:
                break
            await asyncio.sleep(delay)
        started = datetime.now(UTC)
        self.runs.append(
            Run(
                dispatch.execution_id,
                dispatch.fence,
                dispatch.attempt,
                dispatch.scheduled_for.ToDatetime(UTC),
                start_at,
                started,
            )
        )
        self.changed.set()
        beating = asyncio.create_task(self._beat(dispatch))
        try:
            outcome, error = await self.behaviour(dispatch)
        finally:
            beating.cancel()
        if self.send_results:
            self._outbox.put_nowait(
                pb.ExecutorMessage(
                    result=pb.Result(
                        execution_id=dispatch.execution_id,
                        fence=dispatch.fence,
                        outcome=outcome,  # type: ignore[arg-type]
                        error=error,
                        started_at=_stamp(started),
                        finished_at=_stamp(datetime.now(UTC)),
                    )
                )
            )
        self._outbox.put_nowait(pb.ExecutorMessage(credit=pb.Credit(pool=self.pool, count=1)))

    async def _beat(self, dispatch: pb.Dispatch) -> None:
        if self.heartbeat_every_s is None:
            return
        while True:
            await asyncio.sleep(self.heartbeat_every_s)  # the heartbeat schedule itself
            self.heartbeat(dispatch.execution_id, dispatch.fence)

    def send_result(self, execution_id: str, fence: int, outcome: int) -> None:
        """Report a result as this executor, whether or not it ran the execution."""
        result = pb.Result(execution_id=execution_id, fence=fence, outcome=outcome)  # type: ignore[arg-type]
        self._outbox.put_nowait(pb.ExecutorMessage(result=result))

    def heartbeat(self, execution_id: str, fence: int) -> None:
        self._outbox.put_nowait(
            pb.ExecutorMessage(heartbeat=pb.Heartbeat(execution_id=execution_id, fence=fence))
        )

    async def wait_for(self, condition: Callable[[], bool], within: float = 30.0) -> None:
        async with asyncio.timeout(within):
            while not condition():
                self.changed.clear()
                await self.changed.wait()

    async def stop(self) -> None:
        self._outbox.put_nowait(None)
        for task in list(self._running):
            task.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._channel is not None:
            await self._channel.close()
        if self._requests is not None:
            # Closed here, on its loop: left suspended in the queue's get, it would be
            # finalised after the loop closed (an unraisable error at the end of the run).
            with contextlib.suppress(RuntimeError):  # still being driven: it ends by itself
                await self._requests.aclose()


async def connected(node: SchedulerNode, **options: Any) -> ScriptedExecutor:
    """A scripted executor streaming to `node`, once the node has joined and loaded."""
    if "token" not in options:
        _, options["token"] = await node.store.tenants.create_executor_token(
            "scripted", executor_ids=("*",)
        )
    executor = ScriptedExecutor(node.address, **options)
    await executor.start()
    await node.ready.wait()
    return executor
