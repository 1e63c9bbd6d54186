"""`wheel dev`'s live view: rows, lines, the table, and which rows changed."""

from __future__ import annotations

import dataclasses
import io
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from wheel.dev.view import (
    MEDIUM,
    ROOMY,
    WIDE,
    Changes,
    ExecutionRow,
    format_lateness,
    format_line,
    summary,
    table,
)

JOB = uuid.UUID("60c3e47d-76da-4caf-afc3-070ee324a54e")
AT = datetime(2025, 3, 30, 0, 59, 58, 250000, tzinfo=UTC)


def row(**changes: object) -> ExecutionRow:
    base = ExecutionRow(
        job_name="always-fails",
        execution_id=f"{JOB}@20250330T005958.250000Z",
        scheduled_for=AT,
        fire_at=AT + timedelta(seconds=1),
        status="succeeded",
        attempt=1,
        max_attempts=3,
        executor_id="dev-executor",
        started_at=AT + timedelta(seconds=1, milliseconds=2),
        note=None,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_a_record_becomes_a_row_with_the_execution_id() -> None:
    record = ("hello", JOB, AT, AT, "pending", 0, 3, None, None, None)
    made = ExecutionRow.from_record(record)
    assert made.execution_id == f"{JOB}@20250330T005958.250000Z"
    assert (made.job_name, made.status, made.attempt) == ("hello", "pending", 0)


def test_lateness_is_from_fire_at_and_only_once_that_attempt_started() -> None:
    assert row().lateness == timedelta(milliseconds=2)
    assert row(status="running").lateness == timedelta(milliseconds=2)
    # A retry waiting for its backoff: started_at is the failed attempt's, fire_at the next one's.
    assert row(status="pending", started_at=AT).lateness is None
    assert row(status="dispatched").lateness is None
    assert row(status="dead", started_at=None).lateness is None


@pytest.mark.parametrize(
    ("ms", "text"),
    [(None, "-"), (0, "+0ms"), (2.4, "+2ms"), (999, "+999ms"), (1250, "+1.25s"), (-3, "-3ms")],
)
def test_lateness_reads_in_milliseconds_then_seconds(ms: float | None, text: str) -> None:
    assert format_lateness(None if ms is None else timedelta(milliseconds=ms)) == text


def test_a_line_says_what_happened_and_the_error_s_first_line() -> None:
    dead = row(status="dead", attempt=3, note="RuntimeError: boom on attempt 3\nTraceback ...")
    assert format_line(dead) == (
        "00:59:58.250Z  always-fails         dead         attempt=3/3  executor=dev-executor  "
        f"late=+2ms  id={JOB}@20250330T005958.250000Z  error=RuntimeError: boom on attempt 3"
    )


def test_a_skipped_line_gives_the_reason_and_a_success_no_error() -> None:
    skipped = row(status="skipped", attempt=0, executor_id=None, started_at=None,
                  note="overlap: the previous run was still running")  # fmt: skip
    assert format_line(skipped).endswith("reason=overlap: the previous run was still running")
    assert "executor=-  late=-" in format_line(skipped)
    assert "error" not in format_line(row(note="an old error"))


def test_only_changes_are_reported_oldest_first() -> None:
    changes = Changes()
    later = row(execution_id="b", scheduled_for=AT + timedelta(seconds=10), status="pending",
                attempt=0)  # fmt: skip
    first = [later, row(execution_id="a", status="running")]  # newest first, as queried
    assert [r.execution_id for r in changes.update(first)] == ["a"], "untried pending: no news"
    assert changes.update(first) == []
    now = [dataclasses.replace(later, status="dispatched", attempt=1),
           row(execution_id="a", status="succeeded")]  # fmt: skip
    assert [(r.execution_id, r.status) for r in changes.update(now)] == [
        ("a", "succeeded"), ("b", "dispatched")
    ]  # fmt: skip


def test_a_retry_is_a_change_even_with_the_same_status() -> None:
    changes = Changes()
    changes.update([row(status="pending", attempt=1)])
    assert changes.update([row(status="pending", attempt=2)]) != []


def _render(width: int) -> str:
    out = io.StringIO()
    rows = [row(status="dead", attempt=3, note="RuntimeError: boom\nTraceback"), row()]
    Console(file=out, width=width, force_terminal=False).print(table(rows, "title", width))
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 90, ROOMY, MEDIUM, WIDE])
def test_the_table_fits_its_console(width: int) -> None:
    rendered = _render(width)
    assert max(len(line) for line in rendered.splitlines()) <= width
    assert "always-fails" in rendered
    assert "dead" in rendered
    assert ("RuntimeError: boom" in rendered) == (width >= MEDIUM)
    assert (f"{JOB}@20250330T005958.250000Z" in rendered) == (width >= WIDE)
    assert "Traceback" not in rendered


def test_at_80_columns_a_row_says_when_what_status_how_late_and_how_long() -> None:
    finished = row(finished_at=AT + timedelta(seconds=26, milliseconds=702))
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(table([finished], "title", 80))
    rendered = console.file.getvalue()  # type: ignore[attr-defined]
    assert max(len(line) for line in rendered.splitlines()) <= 80
    assert "25.7 s" in rendered, "took: from start to finish, as people read it"
    assert "+2ms" in rendered


def test_a_paused_jobs_pending_run_shows_as_paused() -> None:
    record = ("hello", JOB, AT, AT, "pending", 0, 3, None, None, None, None, "paused")
    assert ExecutionRow.from_record(record).status == "paused"
    running = ("hello", JOB, AT, AT, "running", 1, 3, "ex", AT, None, None, "paused")
    assert ExecutionRow.from_record(running).status == "running", "a run under way runs on"


def test_the_summary_counts_runs_a_second_failures_and_what_waits() -> None:
    now = AT + timedelta(minutes=1)
    rows = [
        *(row(finished_at=now - timedelta(seconds=s)) for s in (1, 2, 3, 4, 30)),
        row(status="dead"),
        row(status="pending", fire_at=now - timedelta(seconds=5), started_at=None),
        row(status="pending", fire_at=now + timedelta(minutes=5), started_at=None),
        row(status="paused", started_at=None),
    ]
    assert summary(rows, now, "3/3 nodes, executor up") == (
        "3/3 nodes, executor up | 0.4 runs/s | 1 failed | 1 waiting | 1 paused"
    )


def test_a_paused_jobs_pending_run_says_who_paused_it_when_and_why() -> None:
    now = AT + timedelta(hours=2)
    record = ("hello", JOB, AT, AT, "pending", 0, 3, None, None, None, None, "paused",
              "schedule", "alice", "vendor outage, INC-123", AT)  # fmt: skip
    paused = ExecutionRow.from_record(record, now)
    assert (paused.status, paused.note) == (
        "paused",
        "paused by alice 2 h ago: vendor outage, INC-123",
    )
    assert "reason=paused by alice 2 h ago: vendor outage, INC-123" in format_line(paused)
