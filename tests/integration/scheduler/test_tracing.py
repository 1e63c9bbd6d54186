"""Traces of runs through a real node and a real executor, into the SDK's in-memory exporter.

A run is claimed, dispatched and recorded by the node and handled by an
executor in this process; every span is read back from the exporter and
checked: names, parents, the one trace of the run, and the attributes.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode, get_current_span

from tests.integration.nodes import NodeFactory
from tests.integration.notify.receiver import Receiver
from tests.integration.scheduler.helpers import PARTITIONS, at, create_job, status, tenant
from wheel import tracing
from wheel.api.server.registration import register_job
from wheel.cli.logs import JsonFormatter
from wheel.executor.config import ExecutorConfig
from wheel.executor.context import TaskContext
from wheel.executor.executor import Executor
from wheel.executor.tasks import TaskRegistry
from wheel.model.executions import ExecutionStatus
from wheel.model.http_tasks import HttpTask
from wheel.model.ids import ExecutionKey
from wheel.model.jobs import Job, JobSpec
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

SEEN: dict[str, Mapping[str, str]] = {}
"""What each handler saw as ctx.trace_context, and its trace id, by execution id."""


@pytest.fixture
async def node(start_node: NodeFactory, spans: InMemorySpanExporter) -> SchedulerNode:
    started = await start_node()
    await started.ready.wait()
    return started


@pytest.fixture
async def executor(store: Store, node: SchedulerNode) -> AsyncIterator[Executor]:
    registry = TaskRegistry()

    @registry.task("work")
    async def work(context: TaskContext) -> None:
        current = get_current_span().get_span_context()
        SEEN[context.execution_id] = {**context.trace_context, "trace": f"{current.trace_id:032x}"}
        if context.attempt == 1:
            raise RuntimeError("boom")

    running = Executor(
        ExecutorConfig(
            executor_id=f"traced-{uuid.uuid4().hex[:6]}",
            nodes=(node.address,),
            etcd_endpoint="http://127.0.0.1:1",
            pools={"default": 8},
            token=(await store.tenants.create_executor_token("traced"))[1],
            reconnect_max_s=0.5,
        ),
        registry,
    )
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def finished(store: Store, job: Job, spans: InMemorySpanExporter, count: int) -> None:
    """Wait until the run succeeded and `count` attempt spans have ended."""
    assert job.spec.schedule.at is not None
    async with asyncio.timeout(30):
        while True:
            done = await status(store, job, job.spec.schedule.at) is ExecutionStatus.SUCCEEDED
            attempts = [s for s in spans.get_finished_spans() if s.name == "wheel.attempt"]
            if done and len(attempts) >= count:
                return
            await asyncio.sleep(0.05)  # the node and the executor work on their own


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_a_run_is_one_trace_from_claim_to_record_across_attempts(
    store: Store, node: SchedulerNode, executor: Executor, spans: InMemorySpanExporter
) -> None:
    owner = await tenant(store)
    job = await create_job(store, owner, at(0.5), backoff_base=timedelta(milliseconds=50),
                           backoff_cap=timedelta(milliseconds=100))  # fmt: skip
    await finished(store, job, spans, 2)
    assert job.spec.schedule.at is not None
    execution_id = ExecutionKey(job.id, job.spec.schedule.at).id
    trace_id = tracing.trace_id_of(execution_id)
    mine = [s for s in spans.get_finished_spans()
            if (s.attributes or {}).get("wheel.execution.id") == execution_id]  # fmt: skip
    assert {s.context.trace_id for s in mine} == {trace_id}, "every attempt in the run's trace"
    attempts = sorted((s for s in mine if s.name == "wheel.attempt"),
                      key=lambda s: s.attributes["wheel.attempt"])  # type: ignore[index]  # fmt: skip
    assert [a.attributes["wheel.attempt"] for a in attempts] == [1, 2]  # type: ignore[index]
    first, second = attempts
    assert first.status.status_code is StatusCode.ERROR
    assert first.attributes["wheel.outcome"] == "failed"  # type: ignore[index]
    assert first.attributes["wheel.status"] == "pending"  # type: ignore[index]
    assert second.attributes["wheel.outcome"] == "succeeded"  # type: ignore[index]
    assert second.attributes["wheel.status"] == "succeeded"  # type: ignore[index]
    assert first.attributes["wheel.fence"] < second.attributes["wheel.fence"]  # type: ignore[index,operator]
    for attempt in attempts:
        a = attempt.attributes or {}
        assert a["wheel.job.id"] == str(job.id)
        assert a["wheel.tenant.id"] == str(owner.id)
        assert a["wheel.task_type"] == "work"
        children = {s.name: s for s in spans.get_finished_spans()
                    if parent_of(s) == attempt.context.span_id}  # fmt: skip
        assert set(children) == {"wheel.claim", "wheel.dispatch", "wheel.record"}
        claim, dispatch, record = (children[n] for n in ("wheel.claim", "wheel.dispatch",
                                                          "wheel.record"))  # fmt: skip
        assert attempt.start_time == claim.start_time
        assert claim.end_time is not None
        assert dispatch.start_time is not None
        assert claim.end_time <= dispatch.start_time
        assert record.end_time == attempt.end_time
        handlers = [s for s in mine if s.name == "wheel.handler"
                    and parent_of(s) == dispatch.context.span_id]  # fmt: skip
        assert len(handlers) == 1, "the handler continues the dispatch"
        handler = handlers[0]
        assert handler.kind is SpanKind.CONSUMER, "an executor processes the dispatch"
        assert (handler.attributes or {})["wheel.fence"] == a["wheel.fence"]
        assert (handler.attributes or {})["wheel.attempt"] == a["wheel.attempt"]
        assert dispatch.start_time <= handler.start_time  # type: ignore[operator]
        assert handler.end_time <= record.end_time  # type: ignore[operator]
    failed_handler = next(s for s in mine if s.name == "wheel.handler"
                          and (s.attributes or {})["wheel.attempt"] == 1)  # fmt: skip
    assert failed_handler.status.status_code is StatusCode.ERROR
    assert "boom" in (failed_handler.status.description or "")
    seen = SEEN[execution_id]
    assert seen["trace"] == f"{trace_id:032x}", "the handler runs inside its span"
    assert seen["traceparent"].split("-")[1] == f"{trace_id:032x}"


async def test_an_http_task_sends_its_traceparent(
    store: Store, node: SchedulerNode, spans: InMemorySpanExporter
) -> None:
    owner = await tenant(store)
    async with Receiver.running() as receiver:
        target = HttpTask(receiver.url)
        spec = JobSpec("traced-post", target.task_type, at(0.3), payload=b"{}", http=target)
        job = (await register_job(store, owner.id, spec, partitions=PARTITIONS)).job
        (got,) = await receiver.received(1)
        await finished(store, job, spans, 1)
    execution_id = got.headers["Wheel-Execution-Id"]
    _, trace, span_id, flags = got.headers["traceparent"].split("-")
    assert trace == f"{tracing.trace_id_of(execution_id):032x}"
    assert flags == "01"
    (handler,) = [s for s in spans.get_finished_spans() if s.name == "wheel.handler"
                  and (s.attributes or {}).get("wheel.execution.id") == execution_id]  # fmt: skip
    assert f"{handler.context.span_id:016x}" == span_id, "the request carries the runner's span"
    assert handler.kind is SpanKind.CLIENT, "the runner's span is the POST's client side"
    assert (handler.attributes or {})["wheel.outcome"] == "succeeded"
    assert (handler.attributes or {})["http.response.status_code"] == 200
    assert (handler.attributes or {})["url.full"] == receiver.url


def test_log_lines_carry_the_span_they_were_written_in(spans: InMemorySpanExporter) -> None:
    record = logging.LogRecord("wheel", logging.INFO, "", 0, "node.event", (), None)
    assert "trace_id" not in JsonFormatter().format(record)
    span = tracing.handler_started("job@20260101T000000Z", "job", "work", 1, 3, None)
    with tracing.current(span):
        line = JsonFormatter().format(record)
    tracing.handler_ended(span, "succeeded", "")
    assert f'"trace_id": "{tracing.trace_id_of("job@20260101T000000Z"):032x}"' in line
    assert '"span_id": "' in line


def test_off_costs_nothing_and_changes_nothing() -> None:
    assert not tracing.enabled()
    assert tracing.handler_started("x@20260101T000000Z", "x", "work", 1, 1, None) is None
    assert tracing.carrier(None, None) == {}
    assert tracing.carrier(None, "00-" + "a" * 32 + "-" + "b" * 16 + "-01") == {
        "traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    }
    assert tracing.log_fields() == {}
