"""The node's end of the executor stream (`wheel.v1.ExecutorStream/Connect`).

An executor says Hello (id, instance, pools, task types, capacity), the
node checks it and the executor token, answers Welcome (its id, how often to
heartbeat), and from then on the executor sends credits, heartbeats and
results while the node sends dispatches, result acknowledgements, refusals
and cancellations. The node pings an executor it holds back, which answers
with a pong. A broken stream loses nothing: the executor keeps
unacknowledged results and sends them again on another stream; dispatched
work not heard of again is reaped when its lease runs out.

Trust: the stream is the executor's identity. Reports are attributed to the
link, never to a field they carry, and the store accepts them only for runs
dispatched to that executor process. The token is checked again every token
cache period: a revoked one ends the stream. Messages are parsed here from
raw bytes, so garbage is INVALID_ARGUMENT naming what was wrong, never
grpcio's UNKNOWN with a traceback; an unexpected failure is INTERNAL with a
reference that is in this node's log, and nothing else.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.api.server.auth import ExecutorAuthenticator
from wheel.api.status import to_status
from wheel.coordinator.cluster_view import ClusterView, any_set
from wheel.errors import InvalidArgument, PermissionDenied, Unauthenticated, WheelError, excerpt
from wheel.scheduler import messages
from wheel.scheduler.engine import Engine
from wheel.scheduler.links import Link

log = logging.getLogger(__name__)

SERVICE = "wheel.v1.ExecutorStream"
MIN_RECHECK_S = 0.25
"""The token is checked again at least this far apart (a cache time of 0 is allowed)."""

Context = grpc.aio.ServicerContext[bytes, pb.SchedulerMessage]
AnyContext = grpc.aio.ServicerContext[bytes, Any]
Metadata = Sequence[tuple[str, str | bytes]]


def _serialize(message: pb.SchedulerMessage) -> bytes:
    return message.SerializeToString()


def _parse(raw: bytes, number: int) -> pb.ExecutorMessage:
    try:
        return pb.ExecutorMessage.FromString(raw)
    except DecodeError:
        raise InvalidArgument(
            "message", f"message {number} on the stream is not a wheel.v1.ExecutorMessage"
        ) from None


class _Ended(Exception):
    """The node ends this stream with the status of `error`."""

    def __init__(self, error: WheelError) -> None:
        super().__init__(str(error))
        self.error = error


CLOSE_WAIT_S = 1.0
"""How long an ending stream waits for its reader and token watcher to stop."""
CLUSTER_COALESCE_S = 0.05
"""Changes to the cluster map this close together go to executors as one map."""


def cluster_map(view: ClusterView) -> pb.ClusterMap:
    return pb.ClusterMap(
        nodes=[pb.ClusterNode(node_id=n, address=a) for n, a in sorted(view.nodes().items())],
        partitions=view.partition_count() or 0,
        owners=view.owners(),
    )


class ExecutorStreamService:
    def __init__(
        self, engine: Engine, node_id: str, auth: ExecutorAuthenticator, cluster: ClusterView
    ) -> None:
        self._engine = engine
        self._node_id = node_id
        self._auth = auth
        self._cluster = cluster

    def handler(self) -> grpc.GenericRpcHandler:
        """The stream's handler, taking raw bytes so that this module parses them."""
        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "Connect": grpc.stream_stream_rpc_method_handler(
                    self.connect, request_deserializer=None, response_serializer=_serialize
                ),
                "WatchCluster": grpc.unary_stream_rpc_method_handler(
                    self.watch_cluster,
                    request_deserializer=None,
                    response_serializer=pb.ClusterMap.SerializeToString,
                ),
            },
        )

    async def connect(
        self, requests: AsyncIterator[bytes], context: Context
    ) -> AsyncIterator[pb.SchedulerMessage]:
        incoming = aiter(requests)
        metadata: Metadata = tuple(context.invocation_metadata() or ())
        try:
            link = await self._open(incoming, metadata)
        except WheelError as exc:
            await self._end(context, exc)
            return
        except Exception as exc:
            await self._internal(context, exc)
            return
        engine = self._engine
        link.handler = asyncio.current_task()
        reader = asyncio.create_task(self._read(link, incoming), name="stream read")
        watcher = asyncio.create_task(self._watch_token(link, metadata), name="stream token")
        for task in (reader, watcher):
            task.add_done_callback(lambda _: link.close())
        log.info(
            "stream.connected",
            extra={"executor": link.executor_id, "pools": list(link.pools), "node": self._node_id},
        )
        try:
            yield messages.welcome(self._node_id, engine.config.heartbeat_interval_s)
            while (message := await link.outbox.get()) is not None:
                yield messages.outgoing_to_proto(message)
            # Gone from the node before the executor hears why: no dispatch can follow.
            engine.link_lost(link)
            for task in (reader, watcher):
                if task.done() and not task.cancelled() and isinstance(task.exception(), _Ended):
                    ended = task.exception()
                    assert isinstance(ended, _Ended)
                    await self._end(context, ended.error)
                elif task.done() and not task.cancelled() and task.exception() is not None:
                    await self._internal(context, task.exception())  # type: ignore[arg-type]
            if link.ended_because:  # the node let it go: say why, whatever its reads do
                await context.abort(grpc.StatusCode.UNAVAILABLE, link.ended_because)
        finally:
            engine.link_lost(link)
            for task in (reader, watcher):
                task.cancel()
            # A frozen executor's read may not end while it is frozen: do not wait on it.
            await asyncio.wait({reader, watcher}, timeout=CLOSE_WAIT_S)
            for task in (reader, watcher):
                if task.done() and not task.cancelled():
                    task.exception()  # retrieved: it was logged where it happened
            log.info("stream.closed", extra={"executor": link.executor_id, "node": self._node_id})

    async def watch_cluster(
        self, raw: bytes, context: grpc.aio.ServicerContext[bytes, pb.ClusterMap]
    ) -> AsyncIterator[pb.ClusterMap]:
        """The cluster map now, then again after every change, for an executor token."""
        metadata: Metadata = tuple(context.invocation_metadata() or ())
        try:
            await self._auth.check(metadata)
            pb.WatchClusterRequest.FromString(raw)
        except DecodeError:
            await self._end(context, InvalidArgument("request", "not a WatchClusterRequest"))
            return
        except WheelError as exc:
            await self._end(context, exc)
            return
        view = self._cluster
        while True:
            changes = view.change_events()
            yield cluster_map(view)
            await any_set(changes)
            await asyncio.sleep(CLUSTER_COALESCE_S)  # a burst of ownership moves as one map

    async def _open(self, incoming: AsyncIterator[bytes], metadata: Metadata) -> Link:
        """Read and check the Hello, then the token; the link, or the WheelError to end with.

        The Hello is read before the token is checked so that a refused executor's
        first write completes and it hears the refusal, not a broken stream.
        """
        raw = await anext(incoming, None)
        first = None if raw is None else _parse(raw, 1)
        if first is None or first.WhichOneof("body") != "hello":
            raise InvalidArgument("hello", "the first message must be hello")
        hello = messages.hello_from_proto(first.hello)
        credential = await self._auth.check(metadata)
        if not credential.allows(hello.executor_id):
            allowed = ", ".join(credential.executor_ids)
            raise PermissionDenied(
                f"hello.executor_id {excerpt(hello.executor_id)} is not one this executor token"
                f" allows ({allowed})"
            )
        return self._engine.links.connect(hello, credential.token_id)

    async def _read(self, link: Link, incoming: AsyncIterator[bytes]) -> None:
        engine = self._engine
        links, recorder = engine.links, engine.recorder
        number = 1
        try:
            async for raw in incoming:
                number += 1
                message = _parse(raw, number)
                links.heard(link)
                body = message.WhichOneof("body")
                if body == "credit":
                    pool, count = messages.credit_from_proto(message.credit, link.pools)
                    links.grant(link, pool, count)
                elif body in ("result", "results"):
                    results = [message.result] if body == "result" else message.results.results
                    for result in results:
                        parsed = messages.result_from_proto(result)
                        if parsed is None:
                            recorder.refuse_unreadable(link, result.execution_id, result.fence)
                        else:
                            recorder.report(link, parsed)
                elif body in ("heartbeat", "heartbeats"):
                    beats = (
                        [message.heartbeat]
                        if body == "heartbeat"
                        else message.heartbeats.heartbeats
                    )
                    for beat in beats:
                        fenced = messages.heartbeat_from_proto(beat)
                        if fenced is not None:
                            recorder.heartbeat(link, fenced)
                elif body == "pong":
                    pass  # the answer to a probe: that it came (links.heard) is all it says
                elif body == "hello":
                    raise InvalidArgument("hello", "sent again: only the first message is a hello")
                else:
                    raise InvalidArgument("message", f"message {number} has no body")
        except WheelError as exc:
            log.warning(
                "stream.bad_input",
                extra={"executor": link.executor_id, "node": self._node_id, "error": str(exc)},
            )
            raise _Ended(exc) from None
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError) as exc:
            log.info("stream.read_ended", extra={"executor": link.executor_id, "error": repr(exc)})

    async def _watch_token(self, link: Link, metadata: Metadata) -> None:
        """End the stream once its token is revoked (within the token cache time)."""
        interval_s = max(self._auth.ttl_s, MIN_RECHECK_S)
        while True:
            await asyncio.sleep(interval_s)  # the re-check schedule: a revocation leaves no event
            try:
                credential = await self._auth.check(metadata)
            except (Unauthenticated, PermissionDenied):
                log.warning(
                    "stream.token_revoked",
                    extra={"executor": link.executor_id, "node": self._node_id},
                )
                raise _Ended(Unauthenticated("the executor token was revoked")) from None
            except WheelError:
                continue  # the token store is away: keep serving, check again
            if not credential.allows(link.executor_id):
                raise _Ended(PermissionDenied("the executor token no longer allows this id"))

    async def _end(self, context: AnyContext, error: WheelError) -> None:
        status = to_status(error)
        if status is None:
            await self._internal(context, error)
            return
        if status.code is grpc.StatusCode.UNAVAILABLE:
            log.warning("stream.auth_unavailable", extra={"error": str(error)})
            await context.abort(grpc.StatusCode.UNAVAILABLE, "cannot check the token now")
            return
        log.warning("stream.refused", extra={"reason": str(error), "peer": context.peer()})
        context.set_trailing_metadata(status.trailers())
        await context.abort(status.code, status.message)

    async def _internal(self, context: AnyContext, error: BaseException) -> None:
        reference = uuid.uuid4().hex[:12]
        log.error("stream.internal_error", exc_info=error, extra={"reference": reference})
        await context.abort(
            grpc.StatusCode.INTERNAL, f"internal error (reference {reference} in the node's log)"
        )
