"""`wheel dev`'s example jobs and tasks: valid, as described, made only when missing."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from wheel.dev import tasks as dev_tasks
from wheel.dev.examples import FAIL, HELLO, TICK, describe, example_jobs, missing
from wheel.executor.context import TaskContext
from wheel.executor.tasks import default_registry
from wheel.model.ids import ExecutionId, JobId
from wheel.model.jobs import ScheduleKind
from wheel.schedule import compile_schedule

NOW = datetime(2025, 6, 1, 12, 0, 0, 700000, tzinfo=UTC)


def test_the_examples_are_a_one_off_a_smeared_cron_a_dying_job_and_a_zoned_cron() -> None:
    hello, tick, fails, london = example_jobs(NOW)
    soon = datetime(2025, 6, 1, 12, 0, 3, tzinfo=UTC)  # a few seconds on, a whole second
    assert (hello.schedule.kind, hello.schedule.at, hello.task_type) == (
        ScheduleKind.AT, soon, HELLO
    )  # fmt: skip
    assert (tick.schedule.cron, tick.schedule.smear) == ("*/10 * * * * *", timedelta(seconds=3))
    assert (fails.schedule.at, fails.task_type, fails.policies.max_attempts) == (
        soon, FAIL, 3
    )  # fmt: skip
    assert fails.policies.backoff_base == timedelta(seconds=1)
    assert (london.schedule.cron, london.schedule.time_zone) == ("* * * * *", "Europe/London")


def test_every_example_schedule_compiles() -> None:
    for spec in example_jobs(NOW):
        compile_schedule(spec.schedule, JobId(uuid.uuid4()), now=NOW)


def test_the_banner_describes_each_example_in_a_line() -> None:
    lines = [describe(spec) for spec in example_jobs(NOW)]
    assert lines == [
        "hello                once at 12:00:03Z  (example.hello)",
        "tick                 cron '*/10 * * * * *' in UTC, smear 3 s  (example.tick)",
        "always-fails         once at 12:00:03Z, 3 attempts, backoff 1 s doubling to 4 s, "
        "then dead  (example.fail)",
        "london-every-minute  cron '* * * * *' in Europe/London  (example.hello)",
    ]


def test_only_examples_with_no_job_of_their_name_are_made() -> None:
    examples = example_jobs(NOW)
    assert missing(examples, []) == examples
    assert [s.name for s in missing(examples, ["tick", "hello", "mine"])] == [
        "always-fails", "london-every-minute"
    ]  # fmt: skip
    assert missing(examples, [s.name for s in examples]) == []


def _context(attempt: int) -> TaskContext:
    return TaskContext(
        execution_id=ExecutionId("x"), job_id=JobId(uuid.uuid4()), task_type="t",
        pool="default", attempt=attempt, fence=attempt, scheduled_for=NOW, payload=b"",
        deadline=NOW + timedelta(hours=1),
    )  # fmt: skip


def test_the_example_tasks_are_registered_in_the_default_pool() -> None:
    for name in (HELLO, TICK, FAIL):
        task = default_registry.get(name)
        assert task is not None
        assert task.pool == "default"


def test_the_failing_task_fails_every_attempt() -> None:
    for attempt in (1, 2, 3):
        with pytest.raises(RuntimeError, match=f"example failure on attempt {attempt}"):
            dev_tasks.fail(_context(attempt))


def test_hello_succeeds_and_a_cancelled_tick_returns_at_once() -> None:
    dev_tasks.hello(_context(1))
    ctx = _context(1)
    ctx.cancel_event.set()
    dev_tasks.tick(ctx)


def test_importing_the_cli_registers_no_example_task() -> None:
    # A fresh interpreter: this test module itself imported the tasks above.
    program = (
        "import wheel.cli.main, wheel.dev.cluster; "
        "from wheel.executor.tasks import default_registry; "
        "print(','.join(default_registry.names()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == ""
