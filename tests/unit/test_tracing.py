"""Spans of runs as the semantic conventions read them: each one's kind, and `error.type`
with status ERROR on failure (spans kept in memory; the tree itself is checked end to end
in tests/integration/scheduler/test_tracing.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from wheel import tracing
from wheel.model.executions import Claimed
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId

T0 = datetime(2026, 3, 29, 1, 30, tzinfo=UTC)


def claimed(fence: int = 4) -> Claimed:
    return Claimed(
        key=ExecutionKey(JobId(uuid.uuid4()), T0),
        tenant_id=TenantId(uuid.uuid4()),
        partition=PartitionId(7),
        fence=fence,
        attempt=2,
        lease_until=T0 + timedelta(seconds=30),
        job_version=1,
        task_type="report",
        payload=b"{}",
        pool="default",
        priority=0,
        timeout_s=30.0,
        fire_at=T0,
    )


def by_name(spans: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans.get_finished_spans()}


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_an_attempt_is_internal_its_statements_clients_and_its_dispatch_a_producer(
    spans: InMemorySpanExporter,
) -> None:
    run = claimed()
    tracing.dispatched(run, 1_000, 2_000)
    tracing.recorded(run.key, run.fence, "succeeded", "succeeded", 3_000, 4_000)
    made = by_name(spans)
    kinds = {name: span.kind for name, span in made.items()}
    assert kinds == {
        "wheel.attempt": SpanKind.INTERNAL,
        "wheel.claim": SpanKind.CLIENT,
        "wheel.dispatch": SpanKind.PRODUCER,
        "wheel.record": SpanKind.CLIENT,
    }
    assert attributes(made["wheel.claim"])["db.system.name"] == "postgresql"
    assert attributes(made["wheel.record"])["db.system.name"] == "postgresql"
    for span in made.values():
        assert "error.type" not in attributes(span), span.name
        assert span.status.status_code is StatusCode.UNSET, span.name


@pytest.mark.parametrize("outcome", ["failed", "lease_expired", "rejected", "not_started"])
def test_a_failed_attempt_names_its_outcome_as_error_type(
    spans: InMemorySpanExporter, outcome: str
) -> None:
    run = claimed()
    tracing.dispatched(run, 1_000, 2_000)
    tracing.recorded(run.key, run.fence, outcome, "pending", 3_000, 4_000)
    attempt = by_name(spans)["wheel.attempt"]
    assert attempt.status.status_code is StatusCode.ERROR
    assert attributes(attempt)["error.type"] == outcome
    assert "error.type" not in attributes(by_name(spans)["wheel.record"]), "the write worked"


def test_an_executor_handler_consumes_the_dispatch(spans: InMemorySpanExporter) -> None:
    run = claimed()
    parent = tracing.dispatched(run, 1_000, 2_000)
    span = tracing.handler_started(run.key.id, run.key.job_id, "report", 2, run.fence, parent)
    tracing.handler_ended(span, "failed", "myapp.Busy: later", error_type="myapp.Busy")
    made = by_name(spans)
    handler = made["wheel.handler"]
    assert handler.kind is SpanKind.CONSUMER
    assert handler.parent is not None
    assert handler.parent.span_id == made["wheel.dispatch"].context.span_id
    assert handler.status.status_code is StatusCode.ERROR
    assert handler.status.description == "myapp.Busy: later"
    assert attributes(handler)["error.type"] == "myapp.Busy"


def test_a_failed_handler_without_a_finer_cause_names_its_outcome(
    spans: InMemorySpanExporter,
) -> None:
    span = tracing.handler_started("j@20260329T013000Z", "j", "report", 1, 1, None)
    tracing.handler_ended(span, "stale", "")
    assert attributes(by_name(spans)["wheel.handler"])["error.type"] == "stale"


def test_an_http_task_is_the_client_of_its_post(spans: InMemorySpanExporter) -> None:
    run = claimed()
    parent = tracing.dispatched(run, 1_000, 2_000)
    url = "https://user:secret@hooks.example.com:8443/run?token=s3cret"
    span = tracing.handler_started(
        run.key.id, run.key.job_id, "wheel.http:hooks.example.com", 2, run.fence, parent, url=url
    )
    tracing.handler_ended(span, "failed", "HTTP 503: busy", error_type="503", http_status=503)
    handler = by_name(spans)["wheel.handler"]
    assert handler.kind is SpanKind.CLIENT
    a = attributes(handler)
    assert a["http.request.method"] == "POST"
    assert a["url.full"] == "https://hooks.example.com:8443/run", "no credentials, no query"
    assert (a["server.address"], a["server.port"]) == ("hooks.example.com", 8443)
    assert a["http.response.status_code"] == 503
    assert a["error.type"] == "503"
    assert handler.status.status_code is StatusCode.ERROR


def test_a_webhook_try_is_a_client_span_in_the_runs_trace(spans: InMemorySpanExporter) -> None:
    execution_id = ExecutionKey(JobId(uuid.uuid4()), T0).id
    delivered = tracing.notify_started(execution_id, "n-1", "http://[::1]/hook")
    tracing.notify_ended(delivered, None, None, 204)
    refused = tracing.notify_started(execution_id, "n-1", "http://127.0.0.1:9/hook")
    tracing.notify_ended(refused, "cannot connect: refused", "ConnectionRefusedError", None)
    first, second = spans.get_finished_spans()
    for span in (first, second):
        assert (span.name, span.kind) == ("wheel.notify", SpanKind.CLIENT)
        assert span.context.trace_id == tracing.trace_id_of(execution_id)
    assert attributes(first)["url.full"] == "http://[::1]:80/hook"
    assert attributes(first)["http.response.status_code"] == 204
    assert "error.type" not in attributes(first)
    assert attributes(second)["error.type"] == "ConnectionRefusedError"
    assert second.status.status_code is StatusCode.ERROR


def test_off_nothing_is_made() -> None:
    assert tracing.notify_started("j@20260329T013000Z", "n", "http://example.com/") is None
    assert tracing.rpc_started("grpc", "/wheel.v1.Jobs/ListJobs", ()) is None
    tracing.notify_ended(None, "x", "y", 500)
    tracing.rpc_ended(None, "INTERNAL", True)
