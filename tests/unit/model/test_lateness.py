"""One lateness: from the run's own fire_at (smear included), and none for backfills and
triggers, which say what they are. The dashboard, the CLI and `wheel dev` all show it."""

from __future__ import annotations

import dataclasses
import io
import uuid
from datetime import UTC, datetime, timedelta

from rich.console import Console

from wheel.cli import show
from wheel.client import types
from wheel.dashboard.pages import lateness as dashboard_lateness
from wheel.dev.view import ExecutionRow, format_line
from wheel.model.executions import (
    ExecutionStatus,
    Trigger,
    late_by_s,
    lateness_s,
    not_late_because,
)
from wheel.model.ids import ExecutionId, JobId

NOW = datetime.now(UTC).replace(microsecond=0)
SMEAR = timedelta(seconds=2.4)


def run(**changes: object) -> types.Execution:
    """A scheduled run whose smear put its fire_at 2.4 s after its instant, started 4 ms later."""
    scheduled = NOW - timedelta(minutes=1)
    job_id = JobId(uuid.uuid4())
    base = types.Execution(
        id=ExecutionId(f"{job_id}@x"),
        job_id=job_id,
        job_version=1,
        scheduled_for=scheduled,
        fire_at=scheduled + SMEAR,
        status=ExecutionStatus.SUCCEEDED,
        reason=None,
        attempt=1,
        fence=1,
        trigger=Trigger.SCHEDULE,
        error=None,
        created_at=scheduled - timedelta(hours=1),
        started_at=scheduled + SMEAR + timedelta(milliseconds=4),
        finished_at=scheduled + SMEAR + timedelta(milliseconds=9),
        executor_id="ex",
        priority=0,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_lateness_is_from_fire_at_so_the_smear_is_not_lateness() -> None:
    late_s = lateness_s(run())
    assert late_s is not None
    assert abs(late_s - 0.004) < 1e-9
    assert late_by_s(NOW, NOW + timedelta(seconds=3)) == 3.0


def test_no_lateness_until_the_attempt_at_fire_at_started() -> None:
    assert lateness_s(run(status=ExecutionStatus.PENDING, started_at=None)) is None
    assert lateness_s(run(status=ExecutionStatus.DISPATCHED)) is None
    # A retry waiting for its backoff: started_at is the failed attempt's.
    assert lateness_s(run(status=ExecutionStatus.PENDING)) is None
    assert lateness_s(run(status=ExecutionStatus.RUNNING)) is not None


def test_backfilled_and_triggered_runs_say_what_they_are() -> None:
    days_ago = NOW - timedelta(days=2, hours=21)
    backfilled = run(trigger=Trigger.BACKFILL, scheduled_for=days_ago, fire_at=NOW,
                     started_at=NOW + timedelta(milliseconds=3))  # fmt: skip
    assert lateness_s(backfilled) is None
    assert not_late_because(backfilled) == "backfill"
    assert not_late_because(run(trigger=Trigger.MANUAL)) == "triggered"
    assert not_late_because(run()) is None


def test_the_dashboard_shows_the_same_lateness() -> None:
    assert dashboard_lateness(run()) == "4.0 ms"
    assert dashboard_lateness(run(trigger=Trigger.BACKFILL)) == "backfill"
    assert dashboard_lateness(run(trigger=Trigger.MANUAL)) == "triggered"


def test_the_cli_shows_the_same_lateness() -> None:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    backfilled = run(trigger=Trigger.BACKFILL, scheduled_for=NOW - timedelta(days=3))
    show.executions(console, types.Page(items=(run(), backfilled), next_page_token=""))
    rendered = console.file.getvalue()  # type: ignore[attr-defined]
    assert "4.0 ms" in rendered
    assert "2.4" not in rendered, "the smear is not lateness"
    assert "backfill" in rendered
    assert " d " not in rendered, "a backfill is not days late"


def test_dev_view_shows_the_same_lateness() -> None:
    item = run()
    record = ("tick", item.job_id, item.scheduled_for, item.fire_at, "succeeded", 1, 3, "ex",
              item.started_at, None, item.finished_at, "active", "schedule")  # fmt: skip
    row = ExecutionRow.from_record(record)
    assert row.lateness == timedelta(milliseconds=4)
    assert "late=+4ms" in format_line(row)
    backfill = ("tick", item.job_id, NOW - timedelta(days=3), NOW, "succeeded", 1, 3, "ex",
                NOW, None, NOW, "active", "backfill")  # fmt: skip
    assert "late=backfill" in format_line(ExecutionRow.from_record(backfill))
