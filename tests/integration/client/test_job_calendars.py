"""A job's business calendars through the SDK (async and sync), `wheel jobs` and an apply
file, against a real node: saved, read back, previewed with their skips and moves."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import pytest

from tests.integration.client.test_cli_preview_around_and_attention import invoker
from wheel.cli.jobs import jobs
from wheel.client import AsyncClient, Client
from wheel.errors import InvalidArgument
from wheel.model.jobs import CalendarPolicy, Policies, Schedule, ScheduleKind
from wheel.scheduler.node import SchedulerNode

DAILY = Schedule(ScheduleKind.CRON, cron="0 9 * * *", time_zone="Europe/London")


def _closed_week() -> tuple[str, datetime]:
    """A closed range a week ahead (its text), and the first day after it at 09:00 London."""
    first = datetime.now(UTC).date() + timedelta(days=7)
    last = first + timedelta(days=2)
    return f"{first}..{last}", datetime.combine(last + timedelta(days=1), time(9))


async def test_the_sdk_saves_and_previews_a_jobs_calendars(node: SchedulerNode, token: str) -> None:
    closed, _ = _closed_week()
    async with AsyncClient(node.address, token=token) as client:
        await client.create_calendar("shutdown", dates=[closed])
        policies = Policies(
            calendars=("shutdown",), calendar_policy=CalendarPolicy.PREVIOUS_BUSINESS_DAY
        )
        created = await client.create_job("weekly", "reports.weekly", DAILY, policies=policies)
        assert created.job.policies.calendars == ("shutdown",)
        assert created.job.policies.calendar_policy is CalendarPolicy.PREVIOUS_BUSINESS_DAY
        runs = await client.preview_schedule(DAILY, count=12, job_id=created.job.id)
        # Three closed days, each moving back to the day before them: the first lands on
        # an open day's own run and is skipped, the other two on each other (skipped too).
        skipped = [run for run in runs if run.skipped]
        assert len(skipped) == 3
        assert all(run.calendar == "shutdown" for run in skipped)
        assert skipped[0].note is not None
        assert "where a run already falls" in skipped[0].note
        draft = await client.preview_schedule(
            DAILY, count=12, calendars=["shutdown"], calendar_policy=CalendarPolicy.SKIP
        )
        assert [run.skipped for run in draft] == [run.skipped for run in runs]
        with pytest.raises(InvalidArgument) as refused:
            await client.create_job(
                "bad", "x", DAILY, policies=Policies(calendars=("no-such-calendar",))
            )
        assert refused.value.field == "policies.calendars"

    def sync() -> None:
        with Client(node.address, token=token) as client:
            (job,) = [j for j in client.list_jobs().items if j.name == "weekly"]
            assert job.policies.calendars == ("shutdown",)

    await asyncio.to_thread(sync)


async def test_wheel_jobs_and_apply_files_name_calendars(
    node: SchedulerNode, token: str, tmp_path: Path
) -> None:
    invoke = invoker(node, token)
    closed, _ = _closed_week()
    async with AsyncClient(node.address, token=token) as client:
        await client.create_calendar("shutdown", dates=[closed])
    made = await asyncio.to_thread(
        invoke, jobs, "create", "daily", "--task", "reports.daily", "--cron", "0 9 * * *",
        "--tz", "Europe/London", "--skip-calendar", "shutdown",
        "--calendar-policy", "next_business_day", "--output", "json",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    made_job = json.loads(made.stdout)["job"]
    policies = made_job["policies"]
    assert (policies["calendars"], policies["calendar_policy"]) == (
        ["shutdown"],
        "next_business_day",
    )
    shown = await asyncio.to_thread(invoke, jobs, "get", made_job["id"])
    assert "calendars shutdown (next_business_day)" in shown.stdout
    preview = await asyncio.to_thread(
        invoke, jobs, "preview", "--cron", "0 9 * * *", "--tz", "Europe/London",
        "--skip-calendar", "shutdown", "--count", "12",
    )  # fmt: skip
    assert preview.exit_code == 0, preview.output
    assert "skipped:" in preview.stdout
    assert "(calendar shutdown)" in preview.stdout
    unknown = await asyncio.to_thread(
        invoke, jobs, "create", "other", "--task", "t", "--cron", "0 9 * * *",
        "--skip-calendar", "nope",
    )  # fmt: skip
    assert unknown.exit_code == 2
    assert "--skip-calendar" in unknown.output
    dropped = await asyncio.to_thread(
        invoke, jobs, "update", made_job["id"], "--version", "1", "--no-calendars"
    )
    assert dropped.exit_code == 0, dropped.output

    file = tmp_path / "jobs.toml"
    file.write_text(
        '[jobs.payroll]\ntask = "payroll.run"\ncron = "0 9 25 * *"\ntz = "Europe/London"\n'
        'calendars = ["shutdown"]\ncalendar_policy = "previous_business_day"\n'
    )
    applied = await asyncio.to_thread(invoke, jobs, "apply", "-f", str(file))
    assert applied.exit_code == 0, applied.output

    def read() -> None:
        with Client(node.address, token=token) as client:
            listed = {j.name: j for j in client.list_jobs().items}
            assert listed["payroll"].policies.calendars == ("shutdown",)
            assert (
                listed["payroll"].policies.calendar_policy is CalendarPolicy.PREVIOUS_BUSINESS_DAY
            )
            assert listed["daily"].policies.calendars == ()

    await asyncio.to_thread(read)
