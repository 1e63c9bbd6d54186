"""The executor stream's messages as domain types, converted at the gRPC edge.

`Dispatch` is what a node asks us to run; `Report` is the outcome we owe it.
Only this module and `connection` touch `executor_pb2`.
"""

from __future__ import annotations

import enum
import traceback
import uuid
from dataclasses import dataclass
from datetime import datetime

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.errors import type_name
from wheel.model.ids import ExecutionId, JobId
from wheel.timestamps import set_timestamp, to_datetime

ERROR_LIMIT_BYTES = 4096
"""An error text is capped at this size: the type and message first, then the traceback's end."""
_HEAD_LIMIT_BYTES = 1024
_TRACEBACK_FRAMES = 8


class Outcome(enum.Enum):
    SUCCEEDED = pb.Result.OUTCOME_SUCCEEDED
    FAILED = pb.Result.OUTCOME_FAILED
    NOT_STARTED = pb.Result.OUTCOME_NOT_STARTED


@dataclass(frozen=True, slots=True)
class Dispatch:
    execution_id: ExecutionId
    job_id: JobId
    task_type: str
    pool: str
    payload: bytes
    attempt: int
    fence: int
    scheduled_for: datetime
    start_at: datetime
    """Start the handler at this instant, never before it (wall clock)."""
    deadline: datetime
    traceparent: str | None = None
    """The node's dispatch span (W3C), when the node traces."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.execution_id, self.fence)


@dataclass(frozen=True, slots=True)
class MalformedDispatch:
    """A dispatch that cannot be read: what of it can be answered (its id may be empty)."""

    execution_id: str
    fence: int
    pool: str
    problem: str


@dataclass(frozen=True, slots=True)
class Report:
    """The outcome of one dispatch, buffered until the scheduler acknowledges it."""

    execution_id: ExecutionId
    fence: int
    job_id: JobId | None
    """For routing a resend to the partition's owner; None when the dispatch named no valid job."""
    outcome: Outcome
    error: str
    started_at: datetime | None
    finished_at: datetime

    @property
    def key(self) -> tuple[str, int]:
        return (self.execution_id, self.fence)


def dispatch_from_proto(message: pb.Dispatch) -> Dispatch:
    """ValueError names what is missing or malformed."""
    if not message.execution_id:
        raise ValueError("execution_id is empty")
    try:
        job_id = JobId(uuid.UUID(message.job_id))
    except ValueError:
        raise ValueError(f"job_id {message.job_id!r} is not a UUID") from None
    for name in ("scheduled_for", "deadline"):
        if not message.HasField(name):
            raise ValueError(f"{name} is not set")
    scheduled_for = to_datetime(message.scheduled_for)
    start_at = to_datetime(message.start_at) if message.HasField("start_at") else scheduled_for
    return Dispatch(
        execution_id=ExecutionId(message.execution_id),
        job_id=job_id,
        task_type=message.task_type,
        pool=message.pool,
        payload=bytes(message.payload),
        attempt=message.attempt,
        fence=message.fence,
        scheduled_for=scheduled_for,
        start_at=start_at,
        deadline=to_datetime(message.deadline),
        traceparent=message.traceparent or None,
    )


def result_to_proto(report: Report) -> pb.Result:
    result = pb.Result(
        execution_id=report.execution_id,
        fence=report.fence,
        outcome=report.outcome.value,
        error=report.error,
    )
    set_timestamp(result.finished_at, report.finished_at)
    if report.started_at is not None:
        set_timestamp(result.started_at, report.started_at)
    return result


def describe_error(exc: BaseException) -> str:
    """`Type: message`, then the last frames of the traceback; at most ERROR_LIMIT_BYTES."""
    name = type_name(exc)
    head = _cap_head(f"{name}: {exc}" if str(exc) else name)
    frames = "".join(traceback.format_tb(exc.__traceback__, limit=-_TRACEBACK_FRAMES))
    text = f"{head}\n{frames}".rstrip("\n")
    return _cap_tail(text, head)


def _cap_head(head: str) -> str:
    raw = head.encode()
    if len(raw) <= _HEAD_LIMIT_BYTES:
        return head
    return raw[: _HEAD_LIMIT_BYTES - 3].decode(errors="ignore") + "..."


def _cap_tail(text: str, head: str) -> str:
    raw = text.encode()
    if len(raw) <= ERROR_LIMIT_BYTES:
        return text
    marker = "\n...\n"
    keep = ERROR_LIMIT_BYTES - len(head.encode()) - len(marker)
    return head + marker + raw[len(raw) - keep :].decode(errors="ignore")


def cap_error(text: str) -> str:
    """Any error text cut to ERROR_LIMIT_BYTES."""
    raw = text.encode()
    if len(raw) <= ERROR_LIMIT_BYTES:
        return text
    return raw[: ERROR_LIMIT_BYTES - 3].decode(errors="ignore") + "..."
