"""OpenTelemetry traces of runs, from fire to result: off by default, and free when off.

    pip install 'wheel-scheduler[otel]'
    wheel scheduler --tracing ...    # or WHEEL_TRACING=1; likewise wheel executor
    # exporter and resource follow the standard OTEL_* variables: OTEL_EXPORTER_OTLP_ENDPOINT,
    # OTEL_EXPORTER_OTLP_PROTOCOL (grpc, the default, or http/protobuf), OTEL_SERVICE_NAME, ...

Each attempt of a run is a `wheel.attempt` span on the node that claimed it,
with children `wheel.claim` (the claim statement), `wheel.dispatch` (the
hand-over to an executor, or the node's HTTP runner) and `wheel.record` (the
statement that recorded the result); the executor's `wheel.handler` span is
a child of the dispatch, its context passed in the dispatch as a W3C
`traceparent` (and on to HTTP tasks' requests, and to handlers as
`ctx.trace_context`). Every span carries the execution id, job, tenant,
attempt and fence. Each try of a webhook notification is a `wheel.notify`
span in the run's trace, and every API call (gRPC or Connect JSON) a span
named by its method, continuing the caller's trace when it sends a
`traceparent`.

Span kinds, as the semantic conventions use them: an API call is SERVER;
`wheel.claim` and `wheel.record` (statements to Postgres), an HTTP task's
`wheel.handler` (the POST, whose `traceparent` is this span) and
`wheel.notify` are CLIENT; `wheel.dispatch` is PRODUCER and the executor's
`wheel.handler` CONSUMER, the send and process sides of a message handed
over asynchronously (the dispatch ends at once; the handler runs later, on
another process); `wheel.attempt` is INTERNAL, the node's own work on an
attempt. A span that failed has status ERROR and `error.type`: a run's
outcome (`failed`, `not_started`, `lease_expired`, `rejected`, `stale`), or
what is known more precisely: the class of the exception a handler raised
(`ValueError`, `myapp.errors.Busy`), the stop that ended it (`timeout`,
`cancelled`, `shutdown`, `handed_back`), an HTTP status (`503`) or the
connection's error (`timeout`, `ConnectionRefusedError`); an API call's is
its status code, for the codes a server counts as its own failure
(`INTERNAL`, `UNAVAILABLE`, ...; `unavailable` over Connect).

All attempts of one run share one trace: its id is the first 128 bits of
SHA-256 of the execution id, so any node (and anyone holding the execution
id) finds the same trace. With tracing off no OpenTelemetry module is
imported and every hook is one test of a module global.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from wheel.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

    from wheel.model.executions import Claimed
    from wheel.model.ids import ExecutionKey

_tracer: Tracer | None = None
_provider: TracerProvider | None = None
"""The provider `enable` made (not one it was given): `disable` shuts it down."""
_open: OrderedDict[tuple[str, int], Span] = OrderedDict()
"""The node's attempts between dispatch and record, oldest first."""
MAX_OPEN = 100_000
"""Attempts whose result never reaches this node (its partition moved) are ended here."""
INSTRUMENTATION = "wheel"
_TRACE_HEADERS = frozenset({"traceparent", "tracestate"})


def enable(service_name: str, provider: TracerProvider | None = None) -> None:
    """Trace from now on, into `provider` (default: the OTLP exporter and the resource the
    standard OTEL_* variables describe, named `service_name` unless they name the service)."""
    global _tracer, _provider
    disable()
    if provider is None:
        try:
            from wheel.otlp import provider_from_environment

            provider = provider_from_environment(service_name)
        except ImportError:
            raise ConfigError(
                "tracing", "needs the otel extra: pip install 'wheel-scheduler[otel]'"
            ) from None
        _provider = provider
    _tracer = provider.get_tracer(INSTRUMENTATION)


def disable() -> None:
    """Trace no more; the provider `enable` made exports what it holds, then shuts down."""
    global _tracer, _provider
    _tracer = None
    _open.clear()
    provider, _provider = _provider, None
    if provider is not None:
        provider.shutdown()


def enabled() -> bool:
    return _tracer is not None


def _run_ids(execution_id: str) -> tuple[int, int]:
    """The run's trace id and the span id its attempts hang from, both from its id."""
    digest = hashlib.sha256(execution_id.encode()).digest()
    return int.from_bytes(digest[:16], "big"), int.from_bytes(digest[16:24], "big") or 1


def trace_id_of(execution_id: str) -> int:
    """The trace every attempt of this run belongs to."""
    return _run_ids(execution_id)[0]


def _run_context(execution_id: str) -> Any:
    """A parent context in the run's trace (its span id, like the trace id, from the id)."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    trace_id, span_id = _run_ids(execution_id)
    parent = SpanContext(
        trace_id=trace_id,
        span_id=span_id,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def _attributes(execution_id: str, job_id: object, attempt: int, fence: int) -> dict[str, Any]:
    return {
        "wheel.execution.id": execution_id,
        "wheel.job.id": str(job_id),
        "wheel.attempt": attempt,
        "wheel.fence": fence,
    }


def _postgres(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {**attributes, "db.system.name": "postgresql"}


def _failed(span: Span, error_type: str, description: str | None = None) -> None:
    """Status ERROR and `error.type`, as the semantic conventions record a failure."""
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, description))


def traceparent(span: Span) -> str:
    context = span.get_span_context()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


# -- the node --------------------------------------------------------------------------------


def dispatched(claimed: Claimed, claim_began_ns: int, claim_ended_ns: int) -> str | None:
    """A claimed attempt leaves for its executor: its spans so far, and the traceparent
    the executor continues from (None when tracing is off)."""
    tracer = _tracer
    if tracer is None:
        return None
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    key = claimed.key
    attributes = {
        **_attributes(key.id, key.job_id, claimed.attempt, claimed.fence),
        "wheel.tenant.id": str(claimed.tenant_id),
        "wheel.task_type": claimed.task_type,
        "wheel.partition": claimed.partition,
    }
    attempt = tracer.start_span(
        "wheel.attempt", _run_context(key.id), kind=SpanKind.INTERNAL, attributes=attributes,
        start_time=claim_began_ns,
    )  # fmt: skip
    inside = trace.set_span_in_context(attempt)
    tracer.start_span(
        "wheel.claim", inside, kind=SpanKind.CLIENT, attributes=_postgres(attributes),
        start_time=claim_began_ns,
    ).end(claim_ended_ns)  # fmt: skip
    now = time.time_ns()
    dispatch = tracer.start_span(
        "wheel.dispatch", inside, kind=SpanKind.PRODUCER, attributes=attributes, start_time=now
    )
    dispatch.end(now)
    _open[(key.id, claimed.fence)] = attempt
    while len(_open) > MAX_OPEN:
        _, oldest = _open.popitem(last=False)
        oldest.set_attribute("wheel.outcome", "unknown")
        oldest.end()
    return traceparent(dispatch)


def recorded(
    key: ExecutionKey,
    fence: int,
    outcome: str,
    status: str | None,
    began_ns: int,
    ended_ns: int,
) -> None:
    """The attempt's result was recorded (or refused as stale: `status` None)."""
    tracer = _tracer
    if tracer is None:
        return
    attempt = _open.pop((key.id, fence), None)
    if attempt is None:
        return
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    record = tracer.start_span(
        "wheel.record", trace.set_span_in_context(attempt), kind=SpanKind.CLIENT,
        start_time=began_ns,
        attributes=_postgres({"wheel.outcome": outcome, "wheel.status": status or "stale"}),
    )  # fmt: skip
    record.end(ended_ns)
    attempt.set_attribute("wheel.outcome", outcome)
    attempt.set_attribute("wheel.status", status or "stale")
    if outcome != "succeeded":
        _failed(attempt, outcome, f"{outcome}, then {status or 'stale'}")
    attempt.end(ended_ns)


# -- the executor, and the node's HTTP runner ------------------------------------------------


def handler_started(
    execution_id: str,
    job_id: object,
    task_type: str,
    attempt: int,
    fence: int,
    parent: str | None,
    *,
    url: str | None = None,
) -> Span | None:
    """The handler's span, a child of the dispatch's `parent` traceparent (None when off):
    CONSUMER on an executor, CLIENT for an HTTP task's POST to `url`."""
    tracer = _tracer
    if tracer is None:
        return None
    from opentelemetry.trace import SpanKind
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    context = (
        TraceContextTextMapPropagator().extract({"traceparent": parent})
        if parent
        else _run_context(execution_id)
    )
    attributes = {**_attributes(execution_id, job_id, attempt, fence), "wheel.task_type": task_type}
    kind = SpanKind.CONSUMER
    if url is not None:
        kind = SpanKind.CLIENT
        attributes.update(_http_request(url))
    return tracer.start_span("wheel.handler", context, kind=kind, attributes=attributes)


def handler_ended(
    span: Span | None,
    outcome: str,
    error: str,
    *,
    error_type: str | None = None,
    http_status: int | None = None,
) -> None:
    """The handler's span ends; a failure's `error.type` is `error_type`, else `outcome`."""
    if span is None:
        return
    span.set_attribute("wheel.outcome", outcome)
    if http_status is not None:
        span.set_attribute("http.response.status_code", http_status)
    if outcome != "succeeded":
        _failed(span, error_type or outcome, error[:200] or outcome)
    span.end()


def _http_request(url: str) -> dict[str, Any]:
    """An HTTP client span's attributes; the URL without credentials or query (either may
    hold a secret)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    shown = f"[{host}]" if ":" in host else host
    return {
        "http.request.method": "POST",
        "url.full": f"{parts.scheme}://{shown}:{port}{parts.path}",
        "server.address": host,
        "server.port": port,
    }


# -- webhook notifications -------------------------------------------------------------------


def notify_started(execution_id: str, notification_id: str, url: str) -> Span | None:
    """One try of a notification about the run `execution_id`: a CLIENT span in its trace."""
    tracer = _tracer
    if tracer is None:
        return None
    from opentelemetry.trace import SpanKind

    attributes = {
        "wheel.execution.id": execution_id,
        "wheel.notification.id": notification_id,
        **_http_request(url),
    }
    return tracer.start_span(
        "wheel.notify", _run_context(execution_id), kind=SpanKind.CLIENT, attributes=attributes
    )


def notify_ended(
    span: Span | None, error: str | None, error_type: str | None, http_status: int | None
) -> None:
    """The try ends: delivered when `error` is None."""
    if span is None:
        return
    if http_status is not None:
        span.set_attribute("http.response.status_code", http_status)
    if error is not None:
        _failed(span, error_type or "_OTHER", error[:200])
    span.end()


# -- the API ---------------------------------------------------------------------------------


def rpc_started(system: str, method: str, headers: Iterable[tuple[str, Any]]) -> Span | None:
    """An API call's SERVER span (None when off), named `wheel.v1.Jobs/ListJobs` for the
    `method` /wheel.v1.Jobs/ListJobs; a child of the caller's span when `headers` (gRPC
    metadata or HTTP headers) carry a W3C traceparent."""
    tracer = _tracer
    if tracer is None:
        return None
    from opentelemetry.trace import SpanKind
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier = {
        name.lower(): value
        for name, value in headers
        if isinstance(value, str) and name.lower() in _TRACE_HEADERS
    }
    parent = TraceContextTextMapPropagator().extract(carrier) if carrier else None
    name = method.lstrip("/")
    attributes = {"rpc.system.name": system, "rpc.method": name}
    return tracer.start_span(name, parent, kind=SpanKind.SERVER, attributes=attributes)


def rpc_ended(span: Span | None, status_code: str | None, failed: bool) -> None:
    """The call answered `status_code` (None: the protocol names no code for success);
    `failed` when the code is the server's own failure, not the caller's."""
    if span is None:
        return
    if status_code is not None:
        span.set_attribute("rpc.response.status_code", status_code)
    if failed:
        _failed(span, status_code or "_OTHER")
    span.end()


# -- context ---------------------------------------------------------------------------------


def carrier(span: Span | None, parent: str | None) -> Mapping[str, str]:
    """What a handler gets as `ctx.trace_context`: W3C headers of its span (or the node's)."""
    if span is not None:
        return {"traceparent": traceparent(span)}
    return {"traceparent": parent} if parent else {}


_NO_SPAN: contextlib.AbstractContextManager[None] = contextlib.nullcontext()


def current(span: Span | None) -> contextlib.AbstractContextManager[None]:
    """Inside, `span` is the current span: a handler's own spans and logs nest under it.
    With tracing off (no span) it costs nothing: every run starts inside one."""
    return _NO_SPAN if span is None else _current(span)


@contextlib.contextmanager
def _current(span: Span) -> Iterator[None]:
    from opentelemetry import context, trace

    token = context.attach(trace.set_span_in_context(span))
    try:
        yield
    finally:
        context.detach(token)


def log_fields() -> dict[str, str]:
    """The current span's trace and span ids, for a log line (nothing when off or outside)."""
    if _tracer is None:
        return {}
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}
