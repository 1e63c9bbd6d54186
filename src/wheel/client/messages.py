"""Protobuf messages from the server as the SDK's types (`wheel.client.types`).

The one place in the SDK that reads `_pb2` messages. Schedules and policies
go through `wheel.api.convert`, the conversion the server uses, so a job reads
back exactly as it was defined. A value this client does not know (an enum
number or a name from a newer server) is a `RemoteError` saying so, never a
silently wrong field.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api.convert import EXECUTION_STATUS_FROM, JOB_STATUS_FROM, policies_from, schedule_from
from wheel.api.status import RemoteError
from wheel.client import types as t
from wheel.model.executions import Outcome, Trigger
from wheel.model.http_tasks import HttpTask
from wheel.model.ids import ExecutionId, JobId
from wheel.timestamps import to_datetime

E = TypeVar("E", bound=StrEnum)
V = TypeVar("V")


def _unknown(field: str, value: object) -> RemoteError:
    return RemoteError(
        grpc.StatusCode.INTERNAL,
        f"the server sent {field}={value!r}, which this client does not know: "
        "upgrade wheel-scheduler",
    )


def _lookup(table: Mapping[Any, V], value: object, field: str) -> V:
    try:
        return table[value]
    except KeyError:
        raise _unknown(field, value) from None


def _named(cls: type[E], value: str, field: str) -> E:
    try:
        return cls(value)
    except ValueError:
        raise _unknown(field, value) from None


def _job_id(text: str, field: str = "job_id") -> JobId:
    try:
        return JobId(uuid.UUID(text))
    except ValueError:
        raise _unknown(field, text) from None


def _optional_time(message: Any, name: str) -> datetime | None:
    if not message.HasField(name):
        return None
    stamp: Timestamp = getattr(message, name)
    return to_datetime(stamp)


def _text(value: str) -> str | None:
    return value or None


def job(message: pb.Job) -> t.Job:
    return t.Job(
        id=_job_id(message.id, "job.id"),
        name=message.name,
        task_type=message.task_type,
        payload=message.payload,
        schedule=schedule_from(message.schedule, "job.schedule"),
        policies=policies_from(message.policies, "job.policies"),
        status=_lookup(JOB_STATUS_FROM, message.status, "job.status"),
        version=message.version,
        created_at=to_datetime(message.created_at),
        updated_at=to_datetime(message.updated_at),
        warnings=tuple(message.warnings),
        last_run=(
            t.LastRun(
                execution_id=ExecutionId(message.last_run.execution_id),
                status=_lookup(EXECUTION_STATUS_FROM, message.last_run.status, "job.last_run"),
                scheduled_for=to_datetime(message.last_run.scheduled_for),
                finished_at=_optional_time(message.last_run, "finished_at"),
            )
            if message.HasField("last_run")
            else None
        ),
        next_run_at=_optional_time(message, "next_run_at"),
        http=(
            HttpTask(message.http.url, message.http.retry_client_errors)
            if message.HasField("http")
            else None
        ),
        attention=(
            t.JobAttention(
                unserved=message.attention.unserved,
                overdue=message.attention.overdue,
                failing=message.attention.failing,
                summary=message.attention.summary,
                deadline_missed=message.attention.deadline_missed,
            )
            if message.HasField("attention")
            else None
        ),
        pause=_pause(message),
    )


def _pause(message: pb.Job) -> t.Pause | None:
    if message.status != pb.JOB_STATUS_PAUSED:
        return None
    return t.Pause(message.pause_note, message.paused_by, _optional_time(message, "paused_at"))


def attempt(message: pb.Attempt) -> t.Attempt:
    return t.Attempt(
        number=message.number,
        executor_id=_text(message.executor_id),
        fence=message.fence,
        started_at=_optional_time(message, "started_at"),
        finished_at=_optional_time(message, "finished_at"),
        outcome=_named(Outcome, message.outcome, "attempt.outcome"),
        error=_text(message.error),
    )


def execution(message: pb.Execution) -> t.Execution:
    return t.Execution(
        id=ExecutionId(message.id),
        job_id=_job_id(message.job_id, "execution.job_id"),
        job_version=message.job_version,
        scheduled_for=to_datetime(message.scheduled_for),
        fire_at=to_datetime(message.fire_at),
        status=_lookup(EXECUTION_STATUS_FROM, message.status, "execution.status"),
        reason=_text(message.reason),
        attempt=message.attempt,
        fence=message.fence,
        trigger=_named(Trigger, message.trigger, "execution.trigger"),
        error=_text(message.error),
        created_at=to_datetime(message.created_at),
        started_at=_optional_time(message, "started_at"),
        finished_at=_optional_time(message, "finished_at"),
        executor_id=_text(message.executor_id),
        priority=message.priority,
        attempts=tuple(attempt(item) for item in message.attempts),
        retries=tuple(
            t.Retry(at=to_datetime(r.at), by=r.by, after_attempt=r.after_attempt)
            for r in message.retries
        ),
        waiting=_text(message.waiting),
        waiting_detail=_text(message.waiting_detail),
        lateness_s=message.lateness_s if message.HasField("lateness_s") else None,
        not_late_because=_text(message.not_late_because),
        deadline_at=_optional_time(message, "deadline_at"),
        deadline_missed_at=_optional_time(message, "deadline_missed_at"),
        concurrency_key=_text(message.concurrency_key),
    )


def next_run(message: pb.NextRun) -> t.NextRun:
    return t.NextRun(
        instant=to_datetime(message.instant),
        wall_time=message.wall_time,
        time_zone=message.time_zone,
        note=_text(message.note),
        skipped=message.skipped,
        moved_from=_optional_time(message, "moved_from"),
        calendar=_text(message.calendar),
        calendar_reason=_text(message.calendar_reason),
    )


def created_job(message: api.CreateJobResponse) -> t.CreatedJob:
    return t.CreatedJob(
        job=job(message.job),
        next_runs=tuple(next_run(run) for run in message.next_runs),
        warnings=tuple(message.warnings),
    )


def backfill(message: api.BackfillJobResponse) -> t.Backfill:
    return t.Backfill(
        created_ids=tuple(ExecutionId(item) for item in message.created_ids),
        existing_ids=tuple(ExecutionId(item) for item in message.existing_ids),
    )


_VERDICTS = {
    number: t.Verdict(name.lower())
    for name, number in api.Explanation.Verdict.items()
    if number != api.Explanation.VERDICT_UNSPECIFIED
}


def explanation(message: api.Explanation) -> t.Explanation:
    return t.Explanation(
        execution_id=ExecutionId(message.execution_id) if message.execution_id else None,
        job_id=_job_id(message.job_id, "explanation.job_id"),
        scheduled_for=to_datetime(message.scheduled_for),
        verdict=_lookup(_VERDICTS, message.verdict, "explanation.verdict"),
        summary=message.summary,
        steps=tuple(
            t.Step(at=_optional_time(step, "at"), what=step.what, detail=step.detail)
            for step in message.steps
        ),
        execution=execution(message.execution) if message.HasField("execution") else None,
        concurrency_key=_text(message.concurrency_key),
        concurrency_limit=message.concurrency_limit or None,
        key_holders=tuple(ExecutionId(run) for run in message.key_holders),
        calendar=_text(message.calendar),
        calendar_reason=_text(message.calendar_reason),
        moved_to=_optional_time(message, "moved_to"),
    )


def page(items: Any, token: str, convert: Callable[[Any], V]) -> t.Page[V]:
    return t.Page(items=tuple(convert(item) for item in items), next_page_token=token)


_NODE_STATE = {
    api.NODE_STATE_UNSPECIFIED: t.NodeState.LIVE,  # a node of an older version
    api.NODE_STATE_LIVE: t.NodeState.LIVE,
    api.NODE_STATE_LOST: t.NodeState.LOST,
    api.NODE_STATE_LEFT: t.NodeState.LEFT,
}


def node(message: api.Node) -> t.Node:
    return t.Node(
        node_id=message.node_id,
        address=message.address,
        partitions=message.partitions,
        durability=_text(message.durability),
        state=_lookup(_NODE_STATE, message.state, "node.state"),
        since=_optional_time(message, "since"),
        gone_at=_optional_time(message, "gone_at"),
        taken={item.partition: _text(item.node_id) for item in message.taken},
    )


def roster(message: api.ListNodesResponse) -> t.Roster:
    nodes = tuple(node(item) for item in message.nodes)
    return t.Roster(
        nodes=nodes,
        departed=tuple(node(item) for item in message.departed),
        expected=message.expected or len(nodes),  # an older server does not say
    )


def partition(message: api.PartitionOwner) -> t.Partition:
    return t.Partition(
        partition=message.partition,
        node_id=_text(message.node_id),
        epoch=message.epoch,
        since=_optional_time(message, "since"),
    )


def webhook(message: api.Webhook) -> t.Webhook:
    return t.Webhook(
        url=message.url,
        on=tuple(EXECUTION_STATUS_FROM[s] for s in message.on if s in EXECUTION_STATUS_FROM),
        secret=message.secret,
        secret_rotated_at=to_datetime(message.secret_rotated_at)
        if message.HasField("secret_rotated_at")
        else None,
    )


def executor(message: api.ExecutorInfo) -> t.ExecutorInfo:
    return t.ExecutorInfo(
        executor_id=message.executor_id,
        pools=tuple(message.pools),
        task_types=tuple(message.task_types),
        capacity=message.capacity,
        links=tuple(
            t.ExecutorLink(
                node_id=link.node_id,
                credit=dict(sorted(link.credit.items())),
                in_flight=link.in_flight,
                connected_at=to_datetime(link.connected_at)
                if link.HasField("connected_at")
                else None,
                slots=dict(sorted(link.slots.items())),
                hold=link.hold,
            )
            for link in message.links
        ),
    )
