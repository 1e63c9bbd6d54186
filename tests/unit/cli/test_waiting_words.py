"""`wheel executions list` says why a pending run is not running; `wheel jobs list` flags
a job whose runs need attention."""

from __future__ import annotations

import dataclasses
import io
import uuid
from datetime import UTC, datetime, timedelta

from rich.console import Console

from wheel.cli import show
from wheel.client import types
from wheel.model.executions import ExecutionStatus, Trigger
from wheel.model.ids import ExecutionId, JobId
from wheel.model.jobs import JobStatus, Policies, Schedule, ScheduleKind

NOW = datetime.now(UTC).replace(microsecond=0)


def rendered(draw: object) -> str:
    console = Console(file=io.StringIO(), width=250, color_system=None)
    draw(console)  # type: ignore[operator]
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]


def test_a_pending_runs_detail_says_why_it_waits() -> None:
    job_id = JobId(uuid.uuid4())
    pending = types.Execution(
        id=ExecutionId(f"{job_id}@x"), job_id=job_id, job_version=1, scheduled_for=NOW,
        fire_at=NOW, status=ExecutionStatus.PENDING, reason=None, attempt=0, fence=0,
        trigger=Trigger.SCHEDULE, error=None, created_at=NOW - timedelta(hours=1),
        started_at=None, finished_at=None, executor_id=None, priority=0,
        waiting="unserved", waiting_detail="due 4.0 s ago; no connected executor serves 'x'",
    )  # fmt: skip
    page = types.Page(items=(pending,), next_page_token="")
    text = rendered(lambda console: show.executions(console, page))
    assert "unserved: due 4.0 s ago; no connected executor serves 'x'" in text
    one = rendered(lambda console: show.execution(console, "execution", pending))
    assert "unserved" in one


def test_a_job_needing_attention_is_flagged_in_the_list() -> None:
    job = types.Job(
        id=JobId(uuid.uuid4()), name="tick", task_type="x", payload=b"",
        schedule=Schedule(kind=ScheduleKind.CRON, cron="* * * * *"), policies=Policies(),
        status=JobStatus.ACTIVE, version=1, created_at=NOW, updated_at=NOW,
    )  # fmt: skip
    said = types.JobAttention(unserved=3, overdue=0, failing=1, summary="3 unserved, 1 failing")
    flagged = dataclasses.replace(job, attention=said)
    text = rendered(lambda c: show.jobs(c, types.Page(items=(job, flagged), next_page_token="")))
    assert "active: 3 unserved, 1 failing" in text
    assert text.count("active") == 2
    assert "3 unserved, 1 failing" in rendered(lambda c: show.job(c, "job", flagged))
