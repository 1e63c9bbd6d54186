"""A bad job definition is refused with the field and the reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from wheel.errors import InvalidArgument
from wheel.model.jobs import JobSpec, Policies, Schedule, ScheduleKind

CRON = Schedule(ScheduleKind.CRON, cron="0 9 * * *")


@pytest.mark.parametrize(
    ("build", "field", "reason"),
    [
        (lambda: JobSpec("", "t", CRON), "name", "must not be empty"),
        (lambda: JobSpec("x" * 201, "t", CRON), "name", "longer than 200 characters"),
        (
            lambda: JobSpec("0f8fad5b-d9cb-469f-a165-70867728950e", "t", CRON),
            "name",
            "must not be a UUID",
        ),
        (lambda: JobSpec("n", " ", CRON), "task_type", "must not be empty"),
        (lambda: JobSpec("n", "t", CRON, payload=b"x" * (2 << 20)), "payload", "larger than"),
        (lambda: Schedule(ScheduleKind.AT), "schedule.at", "required for"),
        (lambda: Schedule(ScheduleKind.CRON), "schedule.cron", "required for"),
        (
            lambda: Schedule(ScheduleKind.AT, at=datetime(2030, 1, 1)),
            "schedule.at",
            "must carry a time zone",
        ),
        (
            lambda: Schedule(
                ScheduleKind.CRON,
                cron="* * * * *",
                starts_at=datetime(2030, 1, 2, tzinfo=UTC),
                ends_at=datetime(2030, 1, 1, tzinfo=UTC),
            ),
            "schedule.ends_at",
            "must be after",
        ),
        (lambda: Policies(max_attempts=0), "policies.max_attempts", "0 is not in 1-100"),
        (
            lambda: Policies(backoff_base=timedelta(seconds=10), backoff_cap=timedelta(seconds=1)),
            "policies.backoff_cap",
            "must not be below backoff_base",
        ),
        (lambda: Policies(timeout=timedelta(0)), "policies.timeout", "must be positive"),
        (lambda: Policies(pool=""), "policies.pool", "must not be empty"),
        (lambda: Policies(priority=2**31), "policies.priority", "must fit in 32 bits"),
    ],
)
def test_invalid_definitions_name_the_field(build: Any, field: str, reason: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        build()
    assert caught.value.field == field
    assert reason in caught.value.reason
