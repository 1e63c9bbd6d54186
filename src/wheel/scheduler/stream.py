"""The node's end of the executor stream (`wheel.v1.ExecutorStream/Connect`).

An executor says Hello (pools, task types, capacity), the node answers
Welcome (its id, how often to heartbeat), and from then on the executor
sends credits, heartbeats and results while the node sends dispatches,
result acknowledgements, stale-fence rejections and cancellations. A broken
stream loses nothing: the executor keeps unacknowledged results and sends
them again on another stream; dispatched work not heard of again is reaped
when its lease runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import grpc

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel._proto.wheel.v1 import executor_pb2_grpc as pb_grpc
from wheel.api.auth import ExecutorAuthenticator
from wheel.api.status import to_status
from wheel.errors import PermissionDenied, Unauthenticated, WheelError
from wheel.scheduler.engine import Engine
from wheel.scheduler.links import Link

log = logging.getLogger(__name__)


class ExecutorStreamService(pb_grpc.ExecutorStreamServicer):
    def __init__(self, engine: Engine, node_id: str, auth: ExecutorAuthenticator) -> None:
        self._engine = engine
        self._node_id = node_id
        self._auth = auth

    async def Connect(
        self,
        request_iterator: AsyncIterator[pb.ExecutorMessage],
        context: grpc.aio.ServicerContext[pb.ExecutorMessage, pb.SchedulerMessage],
    ) -> AsyncIterator[pb.SchedulerMessage]:
        # The stream hands out every tenant's payloads and takes their results:
        # only executors' tokens open it.
        try:
            await self._auth.check(context.invocation_metadata())
        except (Unauthenticated, PermissionDenied) as exc:
            status = to_status(exc)
            assert status is not None
            log.warning("stream.refused", extra={"reason": str(exc), "peer": context.peer()})
            await context.abort(status.code, status.message)
            return
        except WheelError as exc:  # the token store is away: the executor retries
            log.warning("stream.auth_unavailable", extra={"error": str(exc)})
            await context.abort(grpc.StatusCode.UNAVAILABLE, "cannot check the token now")
            return
        first = await anext(aiter(request_iterator), None)
        if first is None or first.WhichOneof("body") != "hello":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first message must be hello")
            return
        hello = first.hello
        if not hello.executor_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "hello.executor_id is empty")
            return
        links = self._engine.links
        link = links.connect(
            hello.executor_id, tuple(hello.pools), tuple(hello.task_types), hello.capacity
        )
        log.info(
            "stream.connected",
            extra={
                "executor": hello.executor_id,
                "pools": list(hello.pools),
                "node": self._node_id,
            },
        )
        reader = asyncio.create_task(self._read(link, request_iterator))
        try:
            yield pb.SchedulerMessage(
                welcome=pb.Welcome(
                    node_id=self._node_id,
                    heartbeat_interval_ms=int(self._engine.config.heartbeat_interval_s * 1000),
                )
            )
            while True:
                message = await link.outbox.get()
                if message is None:
                    return
                yield message
        finally:
            links.disconnect(link)
            self._engine.undelivered(link)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            log.info("stream.closed", extra={"executor": hello.executor_id, "node": self._node_id})

    async def _read(self, link: Link, messages: AsyncIterator[pb.ExecutorMessage]) -> None:
        engine = self._engine
        try:
            async for message in messages:
                body = message.WhichOneof("body")
                if body == "credit":
                    engine.links.grant(link, message.credit.pool, message.credit.count)
                elif body == "result":
                    engine.result_from(link, message.result)
                elif body == "results":
                    engine.results_from(link, message.results)
                elif body == "heartbeats":
                    engine.heartbeats_from(link, message.heartbeats)
                elif body == "heartbeat":
                    engine.heartbeat_from(link, message.heartbeat)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError) as exc:
            log.info("stream.read_ended", extra={"executor": link.executor_id, "error": repr(exc)})
        finally:
            engine.links.disconnect(link)
