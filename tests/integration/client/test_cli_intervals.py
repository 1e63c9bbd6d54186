"""`wheel jobs create/preview --every` and `wheel executions explain` against a real node:
the runs around London's next DST change under both policies, and an off-grid instant."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import click
from click.testing import CliRunner, Result

from wheel.cli.jobs import executions, jobs
from wheel.schedule.zones import next_transition
from wheel.scheduler.node import SchedulerNode

LONDON = ZoneInfo("Europe/London")


def invoker(node: SchedulerNode, token: str) -> Callable[..., Result]:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}

    def invoke(group: click.Group, *args: str) -> Result:
        return CliRunner().invoke(group, list(args), env=env)

    return invoke


async def test_preview_around_dst_keeps_real_time_or_the_wall_clock(
    node: SchedulerNode, token: str
) -> None:
    invoke = invoker(node, token)
    change = next_transition(LONDON, datetime.now(UTC), timedelta(days=400))
    assert change is not None
    day = (change.at - timedelta(days=5)).astimezone(LONDON).date()
    anchor = datetime(day.year, day.month, day.day, 9, tzinfo=LONDON).isoformat()
    local: dict[str, list[str]] = {}
    for policy in ("elapsed", "wall"):
        args = ("preview", "--every", "24h", "--anchor", anchor, "--tz", "Europe/London",
                "--interval-dst", policy, "--around", "dst", "--before", "1", "--count", "1",
                "--output", "json")  # fmt: skip
        result = await asyncio.to_thread(invoke, jobs, *args)
        assert result.exit_code == 0, result.output
        both = json.loads(result.stdout)
        local[policy] = [run["wall_time"][11:16] for run in [*both["earlier"], *both["later"]]]
        assert both["later"][0]["note"], "the run after the change says what it did"
    assert local["wall"] == ["09:00", "09:00"]
    assert local["elapsed"][0] == "09:00"
    assert local["elapsed"][1] == ("10:00" if change.forward else "08:00")


async def test_create_and_explain_an_interval_job(node: SchedulerNode, token: str) -> None:
    invoke = invoker(node, token)
    created = await asyncio.to_thread(
        invoke, jobs, "create", "quarterly", "--task", "t", "--every", "15m", "--output", "json"
    )
    assert created.exit_code == 0, created.output
    runs = [datetime.fromisoformat(r["instant"]) for r in json.loads(created.stdout)["next_runs"]]
    assert all(run.minute % 15 == 0 and run.second == 0 for run in runs)
    off = runs[0] + timedelta(minutes=7)
    explained = await asyncio.to_thread(
        invoke, executions, "explain", "--job", "quarterly", "--at", off.isoformat()
    )
    assert explained.exit_code == 0, explained.output
    assert "every 15 minutes of real time (UTC) has no run then" in explained.stdout
    refused = await asyncio.to_thread(
        invoke, jobs, "create", "x", "--task", "t", "--interval-dst", "wall", "--cron", "* * * * *"
    )
    assert refused.exit_code == 2
    assert "--interval-dst: only for an --every schedule" in refused.output
