"""Each try of a notification is a CLIENT span in its run's trace, failed with `error.type`:
the HTTP status, or the connection's error (against a loopback endpoint)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.unit.answering import answering, refusing_url
from wheel import tracing
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import ExecutionKey, JobId, TenantId
from wheel.notify.sender import Sender, SendSettings
from wheel.store.outbox import Due

T0 = datetime(2026, 3, 29, 1, 30, tzinfo=UTC)


def due(url: str) -> Due:
    return Due(
        id=str(uuid.uuid4()), tenant_id=TenantId(uuid.uuid4()),
        key=ExecutionKey(JobId(uuid.uuid4()), T0), job_name="nightly",
        status=ExecutionStatus.DEAD, reason=None, attempt=3, error="boom", url=url,
        created_at=T0, tries=1, secrets=("whsec_" + "ab" * 32,),
    )  # fmt: skip


def sender() -> Sender:
    settings = SendSettings(timeout_s=5.0, denied_networks=())
    return Sender(None, settings, node_id="node-a")  # type: ignore[arg-type]  # no outbox


async def test_each_try_is_a_client_span_in_the_runs_trace(spans: InMemorySpanExporter) -> None:
    async with answering([503, 204]) as url, sender() as sending:
        first = due(url)
        assert not (await sending.try_once(first)).delivered
        assert (await sending.try_once(first)).delivered
    refused = due(refusing_url())
    async with sender() as sending:
        assert not (await sending.try_once(refused)).delivered
    made = spans.get_finished_spans()
    assert [(s.name, s.kind) for s in made] == [("wheel.notify", SpanKind.CLIENT)] * 3
    failed, delivered, unreachable = (dict(s.attributes or {}) for s in made)
    assert [s.context.trace_id for s in made] == [
        tracing.trace_id_of(first.key.id), tracing.trace_id_of(first.key.id),
        tracing.trace_id_of(refused.key.id),
    ]  # fmt: skip
    expected: dict[str, Any] = {"http.response.status_code": 503, "error.type": "503"}
    assert expected.items() <= failed.items()
    assert delivered["http.response.status_code"] == 204
    assert "error.type" not in delivered
    assert unreachable["error.type"] == "ConnectionRefusedError"
    assert "http.response.status_code" not in unreachable
    assert [s.status.status_code for s in made] == [
        StatusCode.ERROR, StatusCode.UNSET, StatusCode.ERROR,
    ]  # fmt: skip
    assert failed["wheel.notification.id"] == first.id
    assert failed["url.full"] == url
