"""Where traces go: the resource and the exporter the standard OTEL_* variables choose, and
spans really exported over OTLP/HTTP to a local receiver."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from wheel import otlp, tracing
from wheel.errors import ConfigError

VARIABLES = (
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in VARIABLES:
        monkeypatch.delenv(variable, raising=False)


def test_wheel_names_the_service_when_the_environment_does_not() -> None:
    attributes = otlp.resource("wheel-scheduler").attributes
    assert attributes["service.name"] == "wheel-scheduler"
    assert attributes["telemetry.sdk.name"] == "opentelemetry", "the SDK's own attributes too"


def test_otel_service_name_names_the_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "billing-scheduler")
    assert otlp.resource("wheel-scheduler").attributes["service.name"] == "billing-scheduler"


def test_otel_resource_attributes_reach_the_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "OTEL_RESOURCE_ATTRIBUTES",
        "deployment.environment.name=prod,service.name=from-attributes,k8s.pod.name=wheel-0",
    )
    attributes = otlp.resource("wheel-executor").attributes
    assert attributes["deployment.environment.name"] == "prod"
    assert attributes["k8s.pod.name"] == "wheel-0"
    assert attributes["service.name"] == "from-attributes"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-service-name")
    assert otlp.resource("wheel-executor").attributes["service.name"] == "from-service-name"


def test_grpc_is_the_default_protocol_and_http_protobuf_the_other() -> None:
    assert otlp.protocol() == "grpc"
    assert isinstance(otlp.span_exporter("grpc"), GrpcExporter)
    assert isinstance(otlp.span_exporter("http/protobuf"), HttpExporter)


@pytest.mark.parametrize(
    ("general", "traces", "chosen"),
    [
        ("http/protobuf", None, "http/protobuf"),
        ("grpc", None, "grpc"),
        (None, "http/protobuf", "http/protobuf"),
        ("grpc", "http/protobuf", "http/protobuf"),
        ("http/protobuf", "grpc", "grpc"),
    ],
)
def test_the_traces_protocol_variable_wins_over_the_general_one(
    monkeypatch: pytest.MonkeyPatch, general: str | None, traces: str | None, chosen: str
) -> None:
    if general is not None:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", general)
    if traces is not None:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", traces)
    assert otlp.protocol() == chosen


@pytest.mark.parametrize("value", ["http/json", "http", "HTTP/PROTOBUF", "grcp"])
def test_a_protocol_wheel_cannot_export_with_fails_loudly(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", value)
    with pytest.raises(ConfigError, match="OTEL_EXPORTER_OTLP_PROTOCOL"):
        otlp.protocol()
    with pytest.raises(ConfigError):
        tracing.enable("wheel-scheduler")
    assert not tracing.enabled()


class _Collector(ThreadingHTTPServer):
    """An OTLP/HTTP receiver: keeps each POST's path, content type and body."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.posts: list[tuple[str, str, bytes]] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.posts.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def collector() -> Iterator[_Collector]:
    server = _Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_http_protobuf_exports_to_the_endpoint_over_http(
    monkeypatch: pytest.MonkeyPatch, collector: _Collector
) -> None:
    host, port = collector.server_address[:2]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://{host!s}:{port}")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "wheel-under-test")
    tracing.enable("wheel-executor")
    try:
        span = tracing.handler_started("j@20260329T013000Z", "j", "report", 1, 3, None)
        tracing.handler_ended(span, "succeeded", "")
    finally:
        tracing.disable()  # the provider wheel made exports what it holds, then shuts down
    ((path, content_type, body),) = collector.posts
    assert (path, content_type) == ("/v1/traces", "application/x-protobuf")
    exported = ExportTraceServiceRequest.FromString(body)
    (resource_spans,) = exported.resource_spans
    service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert service["service.name"] == "wheel-under-test"
    (scope_spans,) = resource_spans.scope_spans
    assert [s.name for s in scope_spans.spans] == ["wheel.handler"]
    trace_id = int.from_bytes(scope_spans.spans[0].trace_id, "big")
    assert trace_id == tracing.trace_id_of("j@20260329T013000Z")
