"""`wheel jobs preview --around` and `wheel jobs list --attention` against a real node."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import click
from click.testing import CliRunner, Result

from wheel.cli.jobs import jobs
from wheel.schedule.zones import next_transition
from wheel.scheduler.node import SchedulerNode


def invoker(node: SchedulerNode, token: str) -> Callable[..., Result]:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}

    def invoke(group: click.Group, *args: str) -> Result:
        return CliRunner().invoke(group, list(args), env=env)

    return invoke


async def test_preview_around_the_zones_next_change_shows_runs_on_both_sides(
    node: SchedulerNode, token: str
) -> None:
    invoke = invoker(node, token)
    change = next_transition(ZoneInfo("Europe/London"), datetime.now(UTC), timedelta(days=400))
    assert change is not None
    args = ("preview", "--cron", "*/15 * * * *", "--tz", "Europe/London", "--around", "dst",
            "--before", "3", "--count", "4")  # fmt: skip
    result = await asyncio.to_thread(invoke, jobs, *args, "--output", "json")
    assert result.exit_code == 0, result.output
    both = json.loads(result.stdout)
    earlier = [datetime.fromisoformat(run["instant"]) for run in both["earlier"]]
    later = [datetime.fromisoformat(run["instant"]) for run in both["later"]]
    assert len(earlier) == 3
    assert len(later) == 4
    assert all(at < change.at for at in earlier)
    assert all(at >= change.at for at in later)
    table = await asyncio.to_thread(invoke, jobs, *args)
    assert table.exit_code == 0, table.output
    assert "(the instant asked about)" in table.stdout
    refused = await asyncio.to_thread(invoke, jobs, *args, "--after", "now")
    assert refused.exit_code == 2
    assert "--around and --after" in refused.output
    nowhere = await asyncio.to_thread(
        invoke, jobs, "preview", "--cron", "0 * * * *", "--tz", "UTC", "--around", "dst"
    )
    assert nowhere.exit_code == 2
    assert "UTC does not change its offset" in nowhere.output
    bad = await asyncio.to_thread(
        invoke, jobs, "preview", "--cron", "0 * * * *", "--around", "tomorrowish"
    )
    assert bad.exit_code == 2
    assert "--around" in bad.output


async def test_list_attention_shows_only_the_jobs_whose_runs_need_a_person(
    node: SchedulerNode, token: str
) -> None:
    invoke = invoker(node, token)
    unserved = await asyncio.to_thread(
        invoke, jobs, "create", "nobody-runs-this", "--task", "no.executor", "--now"
    )
    assert unserved.exit_code == 0, unserved.output
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    quiet = await asyncio.to_thread(
        invoke, jobs, "create", "tomorrow", "--task", "no.executor", "--at", later
    )
    assert quiet.exit_code == 0, quiet.output
    every = await asyncio.to_thread(invoke, jobs, "list", "--output", "json")
    assert {job["name"] for job in json.loads(every.stdout)["items"]} == {
        "nobody-runs-this", "tomorrow",
    }  # fmt: skip
    flagged = await asyncio.to_thread(invoke, jobs, "list", "--attention", "--output", "json")
    assert flagged.exit_code == 0, flagged.output
    assert [job["name"] for job in json.loads(flagged.stdout)["items"]] == ["nobody-runs-this"]
