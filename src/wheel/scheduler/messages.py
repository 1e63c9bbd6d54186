"""The node's edge of the executor stream: protobuf in, domain types out, and back.

Only this module and `stream` touch `executor_pb2` on the node side (the
mirror of `executor/messages.py`). What an executor sends is untrusted:
`hello_from_proto` applies the API's rules to names (bounded, no control
characters) and raises InvalidArgument naming the field; a result or
heartbeat that cannot be read comes back None, to be refused like a stale
one. Nothing here says who sent a message: the stream binds that.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.errors import InvalidArgument, excerpt
from wheel.model.executions import AttemptResult, Fenced, Outcome
from wheel.model.http_tasks import RESERVED_PREFIX
from wheel.model.ids import ExecutionKey
from wheel.model.jobs import MAX_NAME_LENGTH, MAX_POOL_LENGTH, MAX_TASK_TYPE_LENGTH
from wheel.scheduler.outgoing import (
    Acknowledgements,
    Dispatch,
    Dispatches,
    Outgoing,
    Probe,
    Refusal,
)
from wheel.timestamps import shared_timestamp, to_datetime

MAX_POOLS = 100
MAX_TASK_TYPES = 10_000
MAX_CAPACITY = 1_000_000
MAX_CREDIT_PER_MESSAGE = 1_000_000
MAX_ERROR_CHARS = 8192
_INSTANCE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_OUTCOMES = {
    pb.Result.OUTCOME_SUCCEEDED: Outcome.SUCCEEDED,
    pb.Result.OUTCOME_FAILED: Outcome.FAILED,
    pb.Result.OUTCOME_NOT_STARTED: Outcome.NOT_STARTED,
}


@dataclass(frozen=True, slots=True)
class Hello:
    """An executor's announcement, checked."""

    executor_id: str
    pools: tuple[str, ...]
    task_types: tuple[str, ...]
    capacity: int
    instance_id: str
    slots: tuple[tuple[str, int], ...] = ()
    """Handlers it runs at once, by pool, as it said (shown to operators, never trusted:
    dispatch follows credit). Empty: it did not say."""
    hold: int = 0
    """Runs it takes per pool beyond its slots, held until their instant (as it said)."""


def _name(field: str, value: str, limit: int) -> str:
    if not value.strip():
        raise InvalidArgument(field, "must not be empty")
    if len(value) > limit:
        raise InvalidArgument(field, f"longer than {limit} characters")
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise InvalidArgument(field, "must not contain control characters")
    return value


def _names(field: str, values: Iterable[str], limit: int, most: int) -> tuple[str, ...]:
    names = tuple(values)
    if len(names) > most:
        raise InvalidArgument(field, f"more than {most} entries")
    for index, value in enumerate(names):
        _name(f"{field}[{index}]", value, limit)
    if len(set(names)) != len(names):
        raise InvalidArgument(field, "names an entry twice")
    return names


def hello_from_proto(message: pb.Hello) -> Hello:
    """The Hello, checked field by field; InvalidArgument names the first bad one."""
    executor_id = _name("hello.executor_id", message.executor_id, MAX_NAME_LENGTH)
    pools = _names("hello.pools", message.pools, MAX_POOL_LENGTH, MAX_POOLS)
    if not pools:
        raise InvalidArgument("hello.pools", "must name at least one pool")
    task_types = _names(
        "hello.task_types", message.task_types, MAX_TASK_TYPE_LENGTH, MAX_TASK_TYPES
    )
    if any(t.startswith(RESERVED_PREFIX) for t in task_types):
        raise InvalidArgument(
            "hello.task_types", f"task types starting {RESERVED_PREFIX!r} are wheel's own"
        )
    if not 1 <= message.capacity <= MAX_CAPACITY:
        raise InvalidArgument("hello.capacity", f"must be 1 to {MAX_CAPACITY}")
    if not _INSTANCE.fullmatch(message.instance_id):
        raise InvalidArgument(
            "hello.instance_id",
            f"{excerpt(message.instance_id)} is not 1 to 64 characters of [A-Za-z0-9_-]",
        )
    for pool, count in message.slots.items():
        if pool not in pools:
            raise InvalidArgument(f"hello.slots[{excerpt(pool)}]", "is not one of hello.pools")
        if not 1 <= count <= MAX_CAPACITY:
            raise InvalidArgument(f"hello.slots[{excerpt(pool)}]", f"must be 1 to {MAX_CAPACITY}")
    if message.hold > MAX_CREDIT_PER_MESSAGE:
        raise InvalidArgument("hello.hold", f"must be at most {MAX_CREDIT_PER_MESSAGE}")
    return Hello(
        executor_id, pools, task_types, message.capacity, message.instance_id,
        slots=tuple(sorted(message.slots.items())), hold=message.hold,
    )  # fmt: skip


def credit_from_proto(message: pb.Credit, pools: tuple[str, ...]) -> tuple[str, int]:
    """A credit for one of the executor's own pools, bounded."""
    if message.pool not in pools:
        raise InvalidArgument("credit.pool", f"{excerpt(message.pool)} is not in the hello's pools")
    if not 0 < message.count <= MAX_CREDIT_PER_MESSAGE:
        raise InvalidArgument("credit.count", f"must be 1 to {MAX_CREDIT_PER_MESSAGE}")
    return message.pool, message.count


def result_from_proto(message: pb.Result) -> AttemptResult | None:
    """The attempt a result reports (without its sender), or None if it cannot be read."""
    outcome = _OUTCOMES.get(message.outcome)
    try:
        key = ExecutionKey.parse(message.execution_id)
    except ValueError:
        return None
    if outcome is None:
        return None
    return AttemptResult(
        key,
        message.fence,
        outcome,
        started_at=_instant(message, "started_at"),
        finished_at=_instant(message, "finished_at"),
        error=clean_error(message.error),
    )


def heartbeat_from_proto(message: pb.Heartbeat) -> Fenced | None:
    try:
        return Fenced(ExecutionKey.parse(message.execution_id), message.fence)
    except ValueError:
        return None


def _instant(message: pb.Result, field: str) -> datetime | None:
    if not message.HasField(field):
        return None
    try:
        return to_datetime(getattr(message, field))
    except (ValueError, OverflowError):
        return None


def clean_error(error: str) -> str | None:
    """An executor's error text as Postgres can store it (no NUL), bounded."""
    if not error:
        return None
    return error.replace("\x00", "\\0")[:MAX_ERROR_CHARS]


def dispatch_to_proto(dispatch: Dispatch) -> pb.Dispatch:
    claimed, key = dispatch.claimed, dispatch.key
    return pb.Dispatch(
        execution_id=key.id,
        job_id=str(key.job_id),
        task_type=claimed.task_type,
        pool=claimed.pool,
        payload=claimed.payload,
        attempt=claimed.attempt,
        fence=claimed.fence,
        scheduled_for=shared_timestamp(key.scheduled_for),
        start_at=shared_timestamp(dispatch.start_at),
        deadline=shared_timestamp(dispatch.deadline),
        lease_until=shared_timestamp(claimed.lease_until),
        traceparent=dispatch.traceparent or "",
    )


NOT_YOURS = "not dispatched to this executor"


def refusal_to_proto(refusal: Refusal) -> pb.StaleFence:
    """A refused report: stale (with the current fence when known), or not the sender's
    (telling nothing about the run)."""
    if refusal.not_yours:
        return pb.StaleFence(execution_id=refusal.execution_id, fence=refusal.fence,
                             reason=NOT_YOURS)  # fmt: skip
    return pb.StaleFence(execution_id=refusal.execution_id, fence=refusal.fence,
                         current_fence=refusal.current_fence or 0)  # fmt: skip


def outgoing_to_proto(message: Outgoing) -> pb.SchedulerMessage:
    """The wire form of what the engine or recorder put on a link."""
    if isinstance(message, Dispatches):
        if len(message.items) == 1:
            return pb.SchedulerMessage(dispatch=dispatch_to_proto(message.items[0]))
        items = [dispatch_to_proto(item) for item in message.items]
        return pb.SchedulerMessage(dispatches=pb.Dispatches(dispatches=items))
    if isinstance(message, Acknowledgements):
        wire = pb.SchedulerMessage()
        acks = wire.acknowledgements
        acks.SetInParent()  # an empty one still says "acknowledgements"
        for fenced in message.accepted:
            acks.accepted.add(execution_id=fenced.key.id, fence=fenced.fence)
        acks.stale.extend(refusal_to_proto(refusal) for refusal in message.stale)
        return wire
    if isinstance(message, Probe):
        return pb.SchedulerMessage(ping=pb.Ping(nonce=message.nonce))
    return pb.SchedulerMessage(stale_fence=refusal_to_proto(message))


def welcome(node_id: str, heartbeat_interval_s: float) -> pb.SchedulerMessage:
    return pb.SchedulerMessage(
        welcome=pb.Welcome(node_id=node_id, heartbeat_interval_ms=int(heartbeat_interval_s * 1000))
    )
