"""Serving the public services: auth, request parsing and error mapping, once for every RPC.

Handlers are registered with raw-bytes deserialisation so that a malformed
request is parsed here and answered INVALID_ARGUMENT (grpcio's own
deserialiser would turn it into INTERNAL). Every call is authenticated before
anything else; every wheel error becomes its status (`wheel.api.status`);
anything else is logged with a reference and answered INTERNAL with only
that reference, so no server detail leaks to a caller.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from wheel._proto.wheel.v1 import api_pb2
from wheel.api.server.auth import Authenticator
from wheel.api.status import Status, to_status
from wheel.errors import InvalidArgument, WheelError
from wheel.model.ids import TenantId

SERVICE_NAMES = tuple(service.full_name for service in api_pb2.DESCRIPTOR.services_by_name.values())
"""Every public API service, by full name (what reflection lists)."""

log = logging.getLogger(__name__)

Handler = Callable[[Any, TenantId], Awaitable[Message]]


@dataclass(frozen=True, slots=True)
class Rpc:
    """One method of a service: its name, its request type and what answers it."""

    name: str
    request: type[Message]
    handle: Handler


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
) -> Message | Status:
    """One call, whatever carried it (gRPC or JSON): authenticate, parse, handle, and turn
    every failure into its status (an unexpected one into INTERNAL with a reference)."""
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
        status = await answer(
            method, rpc, authenticator, context.invocation_metadata(), lambda: parse(raw)
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
