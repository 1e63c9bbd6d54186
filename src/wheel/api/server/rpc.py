"""Serving the public services: auth, request parsing and error mapping, once for every RPC.

Handlers are registered with raw-bytes deserialisation so that a malformed
request is parsed here and answered INVALID_ARGUMENT (grpcio's own
deserialiser would turn it into INTERNAL). Every call is authenticated before
anything else; every wheel error becomes its status (`wheel.api.status`);
anything else is logged with a reference and answered INTERNAL with only
that reference, so no server detail leaks to a caller. When the node traces,
every call is a SERVER span (`wheel.tracing.rpc_started`), failed when its
code is the server's own failure (SERVER_ERRORS), not the caller's.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from wheel import tracing
from wheel._proto.wheel.v1 import api_pb2, calendars_pb2
from wheel.api.server.auth import Authenticator
from wheel.api.status import Status, to_status
from wheel.errors import InvalidArgument, WheelError
from wheel.model.ids import TenantId

MAX_REQUEST_BYTES = 16 * 1024 * 1024
"""Largest request a node takes, over gRPC (whose default is 4 MiB) and HTTP/JSON alike:
a CreateJobs batch."""
SERVICE_NAMES = tuple(
    service.full_name
    for module in (api_pb2, calendars_pb2)
    for service in module.DESCRIPTOR.services_by_name.values()
)
"""Every public API service, by full name (what reflection lists)."""

SERVER_ERRORS = frozenset(
    {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)
"""The codes a server span counts as failed (the semantic conventions' list for gRPC and
Connect); the others (NOT_FOUND, INVALID_ARGUMENT, ...) are answers to the caller's mistake."""

log = logging.getLogger(__name__)

Handler = Callable[[Any, TenantId], Awaitable[Message]]


@dataclass(frozen=True, slots=True)
class Rpc:
    """One method of a service: its name, its request type and what answers it."""

    name: str
    request: type[Message]
    handle: Handler


@dataclass(frozen=True, slots=True)
class Protocol:
    """What carried a call, as its span names it: `rpc.system.name` and each code's name."""

    system: str
    code_names: Mapping[grpc.StatusCode, str]
    """A code missing here is not recorded (Connect names no code for success)."""


GRPC = Protocol("grpc", {code: code.name for code in grpc.StatusCode})


@dataclass(frozen=True, slots=True)
class Service:
    full_name: str
    """e.g. `wheel.v1.Jobs`."""
    rpcs: Sequence[Rpc]


def add_services(
    server: grpc.aio.Server, authenticator: Authenticator, services: Sequence[Service]
) -> None:
    handlers = [
        grpc.method_handlers_generic_handler(
            service.full_name,
            {rpc.name: _handler(service.full_name, rpc, authenticator) for rpc in service.rpcs},
        )
        for service in services
    ]
    server.add_generic_rpc_handlers(handlers)


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


async def answer(
    method: str,
    rpc: Rpc,
    authenticator: Authenticator,
    metadata: Any,
    parse: Callable[[], Message],
    *,
    protocol: Protocol = GRPC,
    headers: Iterable[tuple[str, Any]] = (),
) -> Message | Status:
    """One call, whatever carried it (gRPC or JSON): authenticate, parse, handle, and turn
    every failure into its status (an unexpected one into INTERNAL with a reference).
    `headers` may carry the caller's trace context (W3C traceparent)."""
    span = tracing.rpc_started(protocol.system, method, headers)
    if span is None:
        return await _answer(method, rpc, authenticator, metadata, parse)
    code = grpc.StatusCode.CANCELLED  # unless it answers
    try:
        with tracing.current(span):
            answered = await _answer(method, rpc, authenticator, metadata, parse)
        code = answered.code if isinstance(answered, Status) else grpc.StatusCode.OK
        return answered
    finally:
        tracing.rpc_ended(span, protocol.code_names.get(code), code in SERVER_ERRORS)


async def _answer(
    method: str,
    rpc: Rpc,
    authenticator: Authenticator,
    metadata: Any,
    parse: Callable[[], Message],
) -> Message | Status:
    try:
        tenant = await authenticator.tenant(metadata)
        return await rpc.handle(parse(), tenant)
    except WheelError as exc:
        status = to_status(exc)
        if status is not None:
            if status.code is grpc.StatusCode.UNAVAILABLE:
                log.warning("api.unavailable", extra={"method": method, "error": str(exc)})
            return status
        return _internal(method, exc)
    except Exception as exc:
        return _internal(method, exc)


def _handler(
    service: str, rpc: Rpc, authenticator: Authenticator
) -> grpc.RpcMethodHandler[bytes, Message]:
    method = f"/{service}/{rpc.name}"

    def parse(raw: bytes) -> Message:
        try:
            return rpc.request.FromString(raw)
        except DecodeError:
            name = rpc.request.DESCRIPTOR.full_name
            raise InvalidArgument("request", f"not a valid {name} message") from None

    async def call(raw: bytes, context: grpc.aio.ServicerContext[bytes, Message]) -> Message:
        metadata = context.invocation_metadata()
        status = await answer(
            method, rpc, authenticator, metadata, lambda: parse(raw), headers=metadata or ()
        )
        if isinstance(status, Message):
            return status
        context.set_trailing_metadata(status.trailers())
        await context.abort(status.code, status.message)
        raise AssertionError("abort returns only by raising")  # pragma: no cover

    return grpc.unary_unary_rpc_method_handler(
        call, request_deserializer=None, response_serializer=_serialize
    )


def _internal(method: str, exc: BaseException) -> Status:
    reference = uuid.uuid4().hex[:12]
    log.error(
        "api.internal_error",
        exc_info=exc,
        extra={"method": method, "reference": reference},
    )
    return Status(
        grpc.StatusCode.INTERNAL,
        f"internal error (reference {reference} in the server's log)",
        (),
    )
