"""TaskContext: read-only facts, a thread-safe heartbeat, cancellation visible to sync code."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from datetime import UTC, datetime

import pytest

from wheel.executor.context import TaskContext
from wheel.model.ids import ExecutionKey, JobId

JOB = JobId(uuid.UUID("0f8e4b5a-3c2d-4e1f-9a8b-7c6d5e4f3a2b"))
AT = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def make(beats: list[str]) -> TaskContext:
    return TaskContext(
        execution_id=ExecutionKey(JOB, AT).id,
        job_id=JOB,
        task_type="send_report",
        pool="default",
        attempt=2,
        fence=7,
        scheduled_for=AT,
        payload=b"{}",
        deadline=datetime(2026, 11, 29, 10, 0, tzinfo=UTC),
        send_heartbeat=lambda: beats.append(threading.current_thread().name),
    )


def test_facts_are_read_only() -> None:
    ctx = make([])
    assert ctx.execution_id == "0f8e4b5a-3c2d-4e1f-9a8b-7c6d5e4f3a2b@20261129T090000.000000Z"
    assert (ctx.attempt, ctx.fence, ctx.scheduled_for.tzinfo) == (2, 7, UTC)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.fence = 8  # type: ignore[misc]


def test_heartbeat_works_from_another_thread() -> None:
    beats: list[str] = []
    ctx = make(beats)
    worker = threading.Thread(target=ctx.heartbeat, name="handler-thread")
    worker.start()
    worker.join()
    ctx.heartbeat()
    assert beats == ["handler-thread", threading.current_thread().name]


def test_cancellation_is_visible_and_awaitable_from_a_thread() -> None:
    ctx = make([])
    assert not ctx.cancelled
    seen: list[bool] = []
    worker = threading.Thread(target=lambda: seen.append(ctx.cancel_event.wait(30)))
    worker.start()
    ctx.cancel_event.set()
    worker.join()
    assert seen == [True]
    assert ctx.cancelled


def test_the_executor_cancelling_wakes_a_handler_that_waits_and_one_that_asks_later() -> None:
    waiting, later = make([]), make([])
    seen: list[bool] = []
    worker = threading.Thread(target=lambda: seen.append(waiting.cancel_event.wait(30)))
    worker.start()
    waiting.request_cancel()
    worker.join()
    later.request_cancel()
    assert seen == [True]
    assert waiting.cancelled
    assert later.cancelled
    assert later.cancel_event.is_set(), "an event made after the cancel is already set"
