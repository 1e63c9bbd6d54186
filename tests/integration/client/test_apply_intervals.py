"""Interval jobs in apply files and through the SDK's apply on a real node: created, read
back equal (so a second apply changes nothing), and edited in place to and from cron."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

import wheel
from wheel.cli.jobs import jobs
from wheel.client import AsyncClient
from wheel.model.jobs import IntervalDst, ScheduleKind
from wheel.scheduler.node import SchedulerNode


async def test_interval_jobs_apply_from_a_toml_file_and_edit_in_place(
    node: SchedulerNode, token: str, tmp_path: Path
) -> None:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}
    path = tmp_path / "jobs.toml"
    anchor = datetime.now(UTC).replace(microsecond=0) - timedelta(days=3, seconds=17)
    path.write_text(
        f'[jobs.sync]\ntask = "crm.sync"\nevery = "90m"\nanchor = "{anchor.isoformat()}"\n'
        'tz = "Europe/London"\ninterval_dst = "wall"\n\n'
        '[jobs.pulse]\ntask = "crm.pulse"\nevery = "15s"\n'
    )

    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(jobs, ["apply", "-f", str(path), *args], env=env)
        return result.exit_code, result.output

    code, out = await asyncio.to_thread(run)
    assert (code, "applied: 2 create" in out) == (0, True), out
    code, out = await asyncio.to_thread(run, "--output", "json")
    assert {c["action"] for c in json.loads(out)["changes"]} == {"unchanged"}, out
    async with AsyncClient(node.address, token=token) as client:
        sync = await client.get_job("sync")
        assert sync.schedule.kind is ScheduleKind.INTERVAL
        assert (sync.schedule.every, sync.schedule.anchor) == (timedelta(minutes=90), anchor)
        assert sync.schedule.interval_dst is IntervalDst.WALL
        # Interval to cron and back is an edit of the same job, not a replacement.
        to_cron = wheel.NewJob("sync", "crm.sync", wheel.cron("*/5 * * * *", "Europe/London"))
        plan = await client.apply_jobs([to_cron])
        assert [(c.action.value, c.fields[:2]) for c in plan.changes] == [
            ("update", ("schedule.kind", "schedule.cron"))
        ]
        back = wheel.NewJob("sync", "crm.sync", wheel.every(timedelta(hours=36)))
        plan = await client.apply_jobs([back])
        assert plan.changes[0].action.value == "update"
        assert (await client.get_job("sync")).id == sync.id

    path.write_text('[jobs.pulse]\ntask = "crm.pulse"\nevery = "0s"\n')
    code, out = await asyncio.to_thread(run)
    assert code == 2
    assert "Invalid value for '--every': must be at least 1 second" in out
    async with AsyncClient(node.address, token=token) as client:
        assert (await client.get_job("pulse")).schedule.every == timedelta(seconds=15)
