"""Requests the SDK builds from its callers' values, checked before anything is sent."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api.convert import (
    CALENDAR_POLICY_TO,
    EXECUTION_STATUS,
    http_to,
    policies_to,
    schedule_to,
)
from wheel.client import types as t
from wheel.errors import InvalidArgument
from wheel.model.executions import ExecutionStatus
from wheel.model.jobs import CalendarPolicy, JobSpec
from wheel.timestamps import to_timestamp

T = TypeVar("T")

JobRef = uuid.UUID | str
"""A job: its id (a UUID, or its text) or its name (unique among the tenant's jobs)."""


def instant(value: datetime, field: str) -> datetime:
    """`value` in UTC; a naive datetime is refused (its zone would be a guess)."""
    if value.tzinfo is None:
        raise InvalidArgument(field, "must carry a time zone (tzinfo)")
    return value.astimezone(UTC)


def job_message(spec: JobSpec, job_id: str, version: int = 0) -> pb.Job:
    return pb.Job(
        id=job_id,
        name=spec.name,
        task_type=spec.task_type,
        payload=spec.payload,
        schedule=schedule_to(spec.schedule),
        policies=policies_to(spec.policies),
        version=version,
        http=http_to(spec.http),
    )


def create_job(spec: JobSpec, job_id: JobRef | None, *, preview: int = 0) -> api.CreateJobRequest:
    """A create that can be repeated: it always names a job id (a fresh one if none given)."""
    return api.CreateJobRequest(
        name=spec.name,
        task_type=spec.task_type,
        payload=spec.payload,
        schedule=schedule_to(spec.schedule),
        policies=policies_to(spec.policies),
        preview=preview,
        job_id=str(job_id) if job_id is not None else str(uuid.uuid4()),
        http=http_to(spec.http),
    )


def statuses(values: Iterable[ExecutionStatus | str]) -> list[pb.ExecutionStatus]:
    result = []
    for value in values:
        try:
            status = ExecutionStatus(value)
        except ValueError:
            known = ", ".join(member.value for member in ExecutionStatus)
            raise InvalidArgument("statuses", f"{value!r} is not one of {known}") from None
        result.append(EXECUTION_STATUS[status])
    return result


def list_executions(
    job_id: JobRef | None,
    wanted: Iterable[ExecutionStatus | str],
    after: datetime | None,
    before: datetime | None,
    page_size: int,
    *,
    oldest_first: bool = False,
) -> api.ListExecutionsRequest:
    request = api.ListExecutionsRequest(
        job_id=str(job_id or ""), statuses=statuses(wanted), page_size=page_size,
        oldest_first=oldest_first,
    )  # fmt: skip
    if after is not None:
        request.scheduled_after.CopyFrom(to_timestamp(instant(after, "scheduled_after")))
    if before is not None:
        request.scheduled_before.CopyFrom(to_timestamp(instant(before, "scheduled_before")))
    return request


async def every_page(fetch: Callable[[str], Awaitable[t.Page[T]]]) -> AsyncIterator[T]:
    """The items of `fetch(token)` page after page, from the first page to the last."""
    token = ""
    while True:
        page = await fetch(token)
        for item in page.items:
            yield item
        token = page.next_page_token
        if not token:
            return


def preview_calendars(
    request: api.PreviewScheduleRequest,
    calendars: Sequence[str],
    policy: CalendarPolicy | None,
) -> None:
    """A preview's business calendars (by name) and policy, when given."""
    request.calendars.extend(calendars)
    if policy is not None:
        request.calendar_policy = CALENDAR_POLICY_TO[policy]
