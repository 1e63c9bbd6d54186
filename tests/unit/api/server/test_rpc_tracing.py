"""Every API call is a SERVER span, over gRPC and over Connect JSON: named by its method,
a child of the caller's traceparent, and failed (`error.type` = its code) only for the
codes that are the server's own failure. Served on loopback by a real gRPC server and the
real JSON gateway, with a token store stand-in."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import grpc
import pytest
from aiohttp import ClientSession, web
from google.protobuf import empty_pb2
from google.protobuf.message import Message
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from wheel.api.server.auth import Authenticator
from wheel.api.server.json_gateway import JsonGateway
from wheel.api.server.rpc import Rpc, Service, add_services
from wheel.errors import NotFound, StoreUnavailable
from wheel.model.ids import TenantId

TENANT = TenantId(uuid.uuid4())
TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE}-{CALLER}-01"


class Tokens:
    async def authenticate(self, token: str) -> TenantId | None:
        return TENANT if token == "whl_good" else None


async def ping(request: Message, tenant: TenantId) -> Message:
    return empty_pb2.Empty()


async def missing(request: Message, tenant: TenantId) -> Message:
    raise NotFound("job", "nightly")


async def down(request: Message, tenant: TenantId) -> Message:
    raise StoreUnavailable("connection refused")


async def broken(request: Message, tenant: TenantId) -> Message:
    raise RuntimeError("a bug")


PROBE = Service(
    "wheel.v1.Probe",
    [
        Rpc("Ping", empty_pb2.Empty, ping),
        Rpc("Missing", empty_pb2.Empty, missing),
        Rpc("Down", empty_pb2.Empty, down),
        Rpc("Broken", empty_pb2.Empty, broken),
    ],
)
# method, gRPC code, Connect code, and whether the server failed
CASES = [
    ("Ping", "OK", None, False),
    ("Missing", "NOT_FOUND", "not_found", False),
    ("Down", "UNAVAILABLE", "unavailable", True),
    ("Broken", "INTERNAL", "internal", True),
]


@pytest.fixture
async def grpc_address() -> AsyncIterator[str]:
    server = grpc.aio.server()
    add_services(server, Authenticator(Tokens()), [PROBE])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


@pytest.fixture
async def json_url() -> AsyncIterator[str]:
    app = web.Application()
    JsonGateway(Authenticator(Tokens()), [PROBE]).add_routes(app)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def the_span(spans: InMemorySpanExporter, method: str) -> ReadableSpan:
    (span,) = [s for s in spans.get_finished_spans() if s.name == f"wheel.v1.Probe/{method}"]
    return span


def check(span: ReadableSpan, system: str, code: str | None, failed: bool) -> None:
    assert span.kind is SpanKind.SERVER
    attributes = dict(span.attributes or {})
    assert attributes["rpc.system.name"] == system
    assert attributes["rpc.method"] == span.name
    assert attributes.get("rpc.response.status_code") == code
    assert span.parent is not None, "the caller's traceparent is its parent"
    assert (f"{span.context.trace_id:032x}", f"{span.parent.span_id:016x}") == (TRACE, CALLER)
    if failed:
        assert attributes["error.type"] == code
        assert span.status.status_code is StatusCode.ERROR
    else:
        assert "error.type" not in attributes
        assert span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize(("method", "code", "connect_code", "failed"), CASES)
async def test_a_grpc_call_is_a_server_span(
    spans: InMemorySpanExporter, grpc_address: str, method: str, code: str,
    connect_code: str | None, failed: bool,
) -> None:  # fmt: skip
    async with grpc.aio.insecure_channel(grpc_address) as channel:
        call = channel.unary_unary(
            f"/wheel.v1.Probe/{method}",
            request_serializer=empty_pb2.Empty.SerializeToString,
            response_deserializer=empty_pb2.Empty.FromString,
        )
        metadata = (("authorization", "Bearer whl_good"), ("traceparent", TRACEPARENT))
        if code == "OK":
            await call(empty_pb2.Empty(), metadata=metadata)
        else:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call(empty_pb2.Empty(), metadata=metadata)
            assert refused.value.code().name == code
    check(the_span(spans, method), "grpc", code, failed)


@pytest.mark.parametrize(("method", "code", "connect_code", "failed"), CASES)
async def test_a_connect_json_call_is_a_server_span(
    spans: InMemorySpanExporter, json_url: str, method: str, code: str,
    connect_code: str | None, failed: bool,
) -> None:  # fmt: skip
    headers = {"Authorization": "Bearer whl_good", "Traceparent": TRACEPARENT}
    async with (
        ClientSession() as session,
        session.post(f"{json_url}/wheel.v1.Probe/{method}", json={}, headers=headers) as answer,
    ):
        assert (answer.status == 200) is (code == "OK")
    check(the_span(spans, method), "connectrpc", connect_code, failed)


async def test_a_call_without_a_traceparent_starts_a_trace(
    spans: InMemorySpanExporter, grpc_address: str
) -> None:
    async with grpc.aio.insecure_channel(grpc_address) as channel:
        call = channel.unary_unary(
            "/wheel.v1.Probe/Ping",
            request_serializer=empty_pb2.Empty.SerializeToString,
            response_deserializer=empty_pb2.Empty.FromString,
        )
        await call(empty_pb2.Empty(), metadata=(("authorization", "Bearer whl_good"),))
    span = the_span(spans, "Ping")
    assert span.parent is None
    assert span.kind is SpanKind.SERVER
