"""`wheel dev`'s live view says "overdue" for a pending run due over OVERDUE_AFTER_S ago,
as the API and the dashboard do, and counts it as waiting."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from wheel.dev.view import ExecutionRow, format_line, summary
from wheel.model.executions import OVERDUE_AFTER_S

NOW = datetime.now(UTC)
JOB = uuid.uuid4()


def record(due_s: float) -> tuple[object, ...]:
    at = NOW - timedelta(seconds=due_s)
    return ("tick", JOB, at, at, "pending", 0, 3, None, None, None, None, "active", "schedule")


def test_a_pending_run_due_long_ago_is_overdue() -> None:
    stuck = ExecutionRow.from_record(record(OVERDUE_AFTER_S + 5), NOW)
    assert stuck.status == "overdue"
    assert " overdue " in format_line(stuck)
    assert stuck.lateness is None
    fresh = ExecutionRow.from_record(record(2), NOW)
    assert fresh.status == "pending"
    assert "2 waiting" in summary([stuck, fresh], NOW)
