"""NodeLink: the executor's stream to one scheduler node, reopened while the node is listed.

One attempt: open `ExecutorStream.Connect`, send `Hello`, wait for `Welcome`
(WELCOME_TIMEOUT_S), then the stream is up: a `Stream` is handed to the
`StreamHandler`, which grants credit and routes work onto it; incoming
messages become domain calls on the handler; a ticker asks the handler which
executions to heartbeat every `heartbeat_interval_ms`. When the stream ends
(EOF, an RPC error, a write failure) the handler hears `stream_down` before
anything else happens, and the link reconnects after an exponential backoff
with jitter (reset once a stream was welcomed). A node that pings and then
says nothing for SILENT_INTERVALS heartbeat intervals is taken to be gone for
that stream, which then ends the same way. Cancelling the link closes its
stream.

Its waits (the heartbeat interval, the reconnect backoff) are on an injected
`Alarm` and silence is measured on an injected monotonic `clock` (by default
the running loop and `time.monotonic`; a test's `ManualClock`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import grpc
import grpc.aio

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel._proto.wheel.v1 import executor_pb2_grpc as pb_grpc
from wheel.executor.messages import (
    Dispatch,
    MalformedDispatch,
    Report,
    dispatch_from_proto,
    result_to_proto,
)
from wheel.keepalive import CLIENT_KEEPALIVE
from wheel.timingwheel import Alarm, sleep

log = logging.getLogger(__name__)

WELCOME_TIMEOUT_S = 10.0
SILENT_INTERVALS = 6
"""A node that pings (every heartbeat interval) and is then heard from for this many
intervals is gone for this stream, whatever gRPC says: a new stream is opened."""
DEFAULT_HEARTBEAT_MS = 2000
"""Used when a Welcome names no interval."""
MIN_HEARTBEAT_MS = 10

Call = grpc.aio.StreamStreamCall[pb.ExecutorMessage, pb.SchedulerMessage]

_BROKEN = (grpc.aio.AioRpcError, grpc.aio.BaseError, asyncio.InvalidStateError)
_REFUSED = (
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.ALREADY_EXISTS,
)
"""How a stream ends under us: RPC errors, and writes on a call that has already finished."""


@dataclass(frozen=True, slots=True)
class Identity:
    """What the executor announces in its Hello."""

    executor_id: str
    pools: tuple[str, ...]
    task_types: tuple[str, ...]
    capacity: int
    slots: tuple[tuple[str, int], ...] = ()
    """Concurrency by pool (what operators see as slots)."""
    hold: int = 0
    """Runs taken per pool beyond its slots, held until their instant."""
    instance_id: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)
    """Made once per process and sent to nodes only: every run a node dispatches to this
    process is bound to it, so no other holder of the executor token can report it."""


class Stream:
    """One welcomed stream to one node: what is owed to it, and the credit it holds.

    Sending never blocks: results, heartbeats and credit pile up here and the
    link's writer takes them as few messages as it can (`next_messages`), so
    messages per second stay low when runs per second are high. Once `alive`
    is False the stream takes nothing more.
    """

    def __init__(
        self, node_id: str, welcome_node_id: str, heartbeat_interval_s: float,
        *, clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self._clock = clock
        self.node_id = node_id
        """The node's id in etcd (`nodes/<id>`)."""
        self.welcome_node_id = welcome_node_id
        self.heartbeat_interval_s = heartbeat_interval_s
        self.alive = True
        self.heard_at = clock()
        """When the node last sent anything on it (`clock` time)."""
        self.pinged = False
        """The node pings: silence on this stream then means it is gone."""
        self.credit: dict[str, int] = {}
        """Credit granted on this stream and not used by a dispatch yet, per pool."""
        self._results: list[pb.Result] = []
        self._heartbeats: list[pb.Heartbeat] = []
        self._pongs: list[int] = []
        self._credits: dict[str, int] = {}
        """Credit granted and not yet sent, per pool."""
        self._waiting = asyncio.Event()

    def __repr__(self) -> str:
        return f"Stream({self.node_id!r}, alive={self.alive})"

    def gone_silent(self) -> bool:
        """A node that pings has said nothing for SILENT_INTERVALS heartbeat intervals: the
        stream is as good as ended (the ticker ends it)."""
        silent_s = self._clock() - self.heard_at
        return self.pinged and silent_s > SILENT_INTERVALS * self.heartbeat_interval_s

    def heard(self) -> None:
        """The node sent something on it now."""
        self.heard_at = self._clock()

    def silent_s(self) -> float:
        """How long the node has said nothing on it."""
        return self._clock() - self.heard_at

    def grant(self, pool: str, count: int) -> None:
        if count > 0 and self.alive:
            self.credit[pool] = self.credit.get(pool, 0) + count
            self._credits[pool] = self._credits.get(pool, 0) + count
            self._waiting.set()

    def take(self, pool: str) -> bool:
        """Use one credit of `pool` for a dispatch; False when the node sent one without credit."""
        left = self.credit.get(pool, 0)
        if left <= 0:
            return False
        self.credit[pool] = left - 1
        return True

    def send_report(self, report: Report) -> bool:
        if not self.alive:
            return False
        self._results.append(result_to_proto(report))
        self._waiting.set()
        return True

    def send_heartbeat(self, execution_id: str, fence: int) -> bool:
        if not self.alive:
            return False
        self._heartbeats.append(pb.Heartbeat(execution_id=execution_id, fence=fence))
        self._waiting.set()
        return True

    def send_pong(self, nonce: int) -> None:
        """Answer a node's ping: it holds this executor back until it hears from it."""
        if self.alive:
            self._pongs.append(nonce)
            self._waiting.set()

    def close(self) -> None:
        if self.alive:
            self.alive = False
            self._waiting.set()

    async def next_messages(self) -> list[pb.ExecutorMessage] | None:
        """Wait for something to send and take all of it; None once closed with nothing left.

        A pong goes first, then results (as one `Results`), then heartbeats, then
        credit summed per pool: a node sees a run's result before the credit its
        end returned.
        """
        while not (self._results or self._heartbeats or self._credits or self._pongs):
            if not self.alive:
                return None
            self._waiting.clear()
            await self._waiting.wait()
        return self.take_messages()

    def take_messages(self) -> list[pb.ExecutorMessage]:
        """Everything owed right now, without waiting."""
        out: list[pb.ExecutorMessage] = []
        pongs, self._pongs = self._pongs, []
        if pongs:  # one answers every ping asked so far
            out.append(pb.ExecutorMessage(pong=pb.Pong(nonce=pongs[-1])))
        results, self._results = self._results, []
        if len(results) == 1:
            out.append(pb.ExecutorMessage(result=results[0]))
        elif results:
            out.append(pb.ExecutorMessage(results=pb.Results(results=results)))
        heartbeats, self._heartbeats = self._heartbeats, []
        if heartbeats:
            out.append(pb.ExecutorMessage(heartbeats=pb.Heartbeats(heartbeats=heartbeats)))
        credits, self._credits = self._credits, {}
        out.extend(
            pb.ExecutorMessage(credit=pb.Credit(pool=pool, count=count))
            for pool, count in credits.items()
        )
        return out


class StreamHandler(Protocol):
    """What a link reports to; every call is made on the event loop."""

    def stream_up(self, stream: Stream) -> None: ...
    def stream_down(self, stream: Stream) -> None: ...
    def on_dispatch(self, stream: Stream, dispatch: Dispatch) -> None: ...
    def on_malformed_dispatch(self, stream: Stream, malformed: MalformedDispatch) -> None: ...
    def on_cancel(self, execution_id: str, fence: int, reason: str) -> None: ...
    def on_stale_fence(self, execution_id: str, fence: int, current_fence: int) -> None: ...
    def on_accepted(self, execution_id: str, fence: int) -> None: ...
    def heartbeats_for(self, stream: Stream) -> list[tuple[str, int]]: ...


def open_channel(address: str, credentials: grpc.ChannelCredentials | None) -> grpc.aio.Channel:
    """A channel to a node: TLS when `credentials` are given (the nodes serve TLS only, when
    configured), with keepalive pings that notice a node gone silent without closing the
    stream (a partition) within seconds, not when TCP gives up minutes later."""
    if credentials is not None:
        return grpc.aio.secure_channel(address, credentials, options=CLIENT_KEEPALIVE)
    return grpc.aio.insecure_channel(address, options=CLIENT_KEEPALIVE)


class NodeLink:
    def __init__(
        self,
        node_id: str,
        address: str,
        identity: Identity,
        handler: StreamHandler,
        *,
        backoff_min_s: float,
        backoff_max_s: float,
        jitter: Callable[[], float] = lambda: random.uniform(0.5, 1.0),
        credentials: grpc.ChannelCredentials | None = None,
        token: str = "",
        clock: Callable[[], float] = time.monotonic,
        alarm: Alarm | None = None,
    ) -> None:
        self.node_id = node_id
        self._clock = clock
        self._alarm = alarm
        self.address = address
        self._credentials = credentials
        """TLS to the node when set (the nodes serve TLS only, when configured)."""
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        """The executor token, sent with the stream (never in a URL or a log)."""
        self._identity = identity
        self._handler = handler
        self._backoff_min_s = backoff_min_s
        self._backoff_max_s = backoff_max_s
        self._jitter = jitter
        self.stream: Stream | None = None
        """The current stream, while one is up."""
        self.welcomes = 0
        """Streams opened so far (for operators and tests)."""

    async def run(self) -> None:
        """Keep a stream open to the node until cancelled."""
        delay_s = self._backoff_min_s
        while True:
            welcomed = await self._attempt()
            if welcomed:
                delay_s = self._backoff_min_s
            pause_s = delay_s * self._jitter()
            log.info(
                "link.reconnect",
                extra={"node": self.node_id, "address": self.address, "after_s": round(pause_s, 3)},
            )
            await sleep(pause_s, self._alarm)  # backoff: the node is listed but not answering
            delay_s = min(delay_s * 2, self._backoff_max_s)

    async def _attempt(self) -> bool:
        """One stream, from Hello to its end; True if it was welcomed."""
        welcomed = False
        channel = open_channel(self.address, self._credentials)
        call: Call | None = None
        try:
            call = pb_grpc.ExecutorStreamStub(channel).Connect(metadata=self._metadata)
            identity = self._identity
            hello = pb.Hello(
                executor_id=identity.executor_id,
                pools=identity.pools,
                task_types=identity.task_types,
                capacity=identity.capacity,
                instance_id=identity.instance_id,
                slots=dict(identity.slots),
                hold=identity.hold,
            )
            await call.write(pb.ExecutorMessage(hello=hello))
            first = await asyncio.wait_for(call.read(), WELCOME_TIMEOUT_S)
            if not isinstance(first, pb.SchedulerMessage) or first.WhichOneof("body") != "welcome":
                log.warning("link.no_welcome", extra={"node": self.node_id, "got": str(first)})
                return False
            welcomed = True
            self.welcomes += 1
            interval_ms = max(
                first.welcome.heartbeat_interval_ms or DEFAULT_HEARTBEAT_MS, MIN_HEARTBEAT_MS
            )
            stream = Stream(
                self.node_id, first.welcome.node_id, interval_ms / 1000, clock=self._clock
            )
            log.info(
                "link.up",
                extra={"node": self.node_id, "address": self.address, "heartbeat_ms": interval_ms},
            )
            await self._serve(call, stream)
            log.info("link.ended", extra={"node": self.node_id})
        except (*_BROKEN, TimeoutError) as exc:
            if isinstance(exc, grpc.aio.AioRpcError) and exc.code() in _REFUSED:
                # The node will refuse again until the executor is fixed: say so loudly.
                log.error(
                    "link.refused",
                    extra={"node": self.node_id, "address": self.address, "error": _describe(exc)},
                )
            else:
                log.info(
                    "link.broken",
                    extra={"node": self.node_id, "address": self.address, "error": _describe(exc)},
                )
        finally:
            if call is not None:
                call.cancel()
            await channel.close()
        return welcomed

    async def _serve(self, call: Call, stream: Stream) -> None:
        self.stream = stream
        self._handler.stream_up(stream)
        reader = asyncio.create_task(self._read(call, stream), name=f"read {self.node_id}")
        writer = asyncio.create_task(self._write(call, stream), name=f"write {self.node_id}")
        ticker = asyncio.create_task(self._heartbeat(stream), name=f"heartbeat {self.node_id}")
        try:
            done, _ = await asyncio.wait(
                {reader, writer, ticker}, return_when=asyncio.FIRST_COMPLETED
            )
            for task in done:
                task.result()  # raises how the stream broke
        finally:
            stream.close()
            self.stream = None
            self._handler.stream_down(stream)  # routing moves elsewhere before anything awaits
            for task in (reader, writer, ticker):
                task.cancel()
            await asyncio.wait({reader, writer, ticker})

    async def _read(self, call: Call, stream: Stream) -> None:
        while True:
            message = await call.read()
            if not isinstance(message, pb.SchedulerMessage):
                return  # EOF: the node ended the stream
            stream.heard()
            self._deliver(stream, message)

    async def _write(self, call: Call, stream: Stream) -> None:
        while (messages := await stream.next_messages()) is not None:
            for message in messages:
                await call.write(message)

    async def _heartbeat(self, stream: Stream) -> None:
        """Every heartbeat interval: heartbeat what this stream keeps, and end the stream if a
        node that pings has gone silent (a node may let go of an executor it thinks frozen,
        and a stream ended on its side is not always heard of on this one)."""
        interval_s = stream.heartbeat_interval_s
        while stream.alive:
            await sleep(interval_s, self._alarm)
            for execution_id, fence in self._handler.heartbeats_for(stream):
                stream.send_heartbeat(execution_id, fence)
            if stream.gone_silent():
                silent_s = stream.silent_s()
                raise TimeoutError(f"nothing from node {self.node_id} for {silent_s:.0f} s")

    def _dispatch(self, stream: Stream, message: pb.Dispatch) -> None:
        try:
            dispatch = dispatch_from_proto(message)
        except ValueError as exc:
            malformed = MalformedDispatch(
                message.execution_id, message.fence, message.pool, str(exc)
            )
            self._handler.on_malformed_dispatch(stream, malformed)
        else:
            self._handler.on_dispatch(stream, dispatch)

    def _deliver(self, stream: Stream, message: pb.SchedulerMessage) -> None:
        handler = self._handler
        kind = message.WhichOneof("body")
        if kind == "dispatch":
            self._dispatch(stream, message.dispatch)
        elif kind == "dispatches":
            for one in message.dispatches.dispatches:
                self._dispatch(stream, one)
        elif kind == "acknowledgements":
            acks = message.acknowledgements
            for accepted in acks.accepted:
                handler.on_accepted(accepted.execution_id, accepted.fence)
            for stale in acks.stale:
                handler.on_stale_fence(stale.execution_id, stale.fence, stale.current_fence)
        elif kind == "cancel":
            cancel = message.cancel
            handler.on_cancel(cancel.execution_id, cancel.fence, cancel.reason)
        elif kind == "stale_fence":
            stale = message.stale_fence
            if stale.reason:
                log.warning(
                    "link.report_refused",
                    extra={"node": self.node_id, "execution": stale.execution_id,
                           "reason": stale.reason},
                )  # fmt: skip
            handler.on_stale_fence(stale.execution_id, stale.fence, stale.current_fence)
        elif kind == "accepted":
            handler.on_accepted(message.accepted.execution_id, message.accepted.fence)
        elif kind == "ping":
            stream.pinged = True
            stream.send_pong(message.ping.nonce)
        else:
            log.warning("link.unexpected_message", extra={"node": self.node_id, "kind": kind})


def _describe(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    return f"{type(exc).__name__}: {exc}"
