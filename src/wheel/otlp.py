"""Where traces go: the OTLP exporter and the resource the standard OTEL_* variables describe.

    provider = provider_from_environment("wheel-scheduler")   # what `tracing.enable` uses

The resource is the SDK's standard one, so OTEL_SERVICE_NAME and
OTEL_RESOURCE_ATTRIBUTES apply as everywhere else (`service.name`,
`deployment.environment.name`, `k8s.pod.name`, ...); the name wheel passes
is only the default. The protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
OTEL_EXPORTER_OTLP_PROTOCOL: `grpc` (the default: wheel's only exporter
before OTLP/HTTP, kept for those who rely on it; the specification's default
is http/protobuf) or `http/protobuf`. `http/json` has no Python exporter; it,
or a typo, fails loudly rather than exporting nowhere. Each exporter reads
its endpoint, headers, certificate and timeout from the same variables.
Imported only when tracing is on: it needs the otel extra.
"""

from __future__ import annotations

import os

from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from wheel.errors import ConfigError

PROTOCOLS = ("grpc", "http/protobuf")
"""The OTLP protocols wheel exports with; the first when the environment names none."""
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
"""Where the protocol is read, the traces' own variable first."""


def provider_from_environment(service_name: str) -> TracerProvider:
    """Spans batched to the exporter OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL chooses, from the
    resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES describe."""
    exporter = span_exporter(protocol())
    provider = TracerProvider(resource=resource(service_name))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def resource(service_name: str) -> Resource:
    """The SDK's standard resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME, the SDK's
    own attributes), named `service_name` when neither variable names the service."""
    named = SERVICE_NAME in OTELResourceDetector().detect().attributes
    return Resource.create({} if named else {SERVICE_NAME: service_name})


def protocol() -> str:
    """The OTLP protocol the environment names, or grpc; any other value is an error."""
    for variable in PROTOCOL_VARIABLES:
        value = os.environ.get(variable, "").strip()
        if not value:
            continue
        if value not in PROTOCOLS:
            raise ConfigError(variable, f"{value!r} is not one of {', '.join(PROTOCOLS)}")
        return value
    return PROTOCOLS[0]


def span_exporter(protocol: str) -> SpanExporter:
    """The OTLP exporter for `protocol`; it reads its endpoint, headers, timeout, ... from
    the environment (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT: for http/protobuf the base URL,
    to which it adds /v1/traces)."""
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpExporter,
        )

        return HttpExporter()
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
        OTLPSpanExporter as GrpcExporter,
    )

    return GrpcExporter()
