"""`apply_jobs` and `wheel jobs apply` against a real node: the tenant's jobs made to match."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

import wheel
from wheel.cli.jobs import jobs
from wheel.client import AsyncClient
from wheel.client.apply import Action, ApplyPlan
from wheel.errors import InvalidArgument, VersionConflict
from wheel.scheduler.node import SchedulerNode


@pytest.fixture
async def client(node: SchedulerNode, token: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(node.address, token=token) as opened:
        yield opened


def actions(plan: ApplyPlan) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {c.name: (c.action.value, c.fields) for c in plan.changes}


async def test_apply_creates_updates_replaces_prunes_and_is_idempotent(
    client: AsyncClient,
) -> None:
    soon = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=2)
    nightly = wheel.NewJob("nightly", "reports.nightly", wheel.cron("30 1 * * *", "Europe/London"))
    once = wheel.NewJob("once", "reports.once", wheel.at(soon), payload=b"v1")
    await client.create_job("stray", "reports.old", wheel.cron("0 0 1 1 *"))

    dry = await client.apply_jobs([nightly, once], prune=True, dry_run=True)
    assert actions(dry) == {"nightly": ("create", ()), "once": ("create", ()),
                            "stray": ("delete", ())}  # fmt: skip
    assert not dry.applied
    assert [job.name async for job in client.jobs()] == ["stray"], "a dry run writes nothing"

    done = await client.apply_jobs([nightly, once], prune=True)
    assert done.applied
    assert sorted([job.name async for job in client.jobs()]) == ["nightly", "once"]
    again = await client.apply_jobs([nightly, once], prune=True)
    assert {c.action for c in again.changes} == {Action.UNCHANGED}
    assert not again.applied, "nothing to change: nothing written"

    before = await client.get_job("nightly")
    edited = wheel.NewJob("nightly", "reports.nightly", wheel.cron("0 2 * * *", "Europe/London"),
                          policies=wheel.Policies(max_attempts=5))  # fmt: skip
    moved = wheel.NewJob("once", "reports.once", wheel.at(soon + timedelta(hours=1)), payload=b"v2")
    changed = await client.apply_jobs([edited, moved])
    assert actions(changed) == {
        "nightly": ("update", ("schedule.cron", "policies.max_attempts")),
        "once": ("replace", ("payload", "schedule.at")),
    }
    after = await client.get_job("nightly")
    assert (after.id, after.version) == (before.id, before.version + 1), "updated in place"
    assert after.policies.max_attempts == 5
    replaced = await client.get_job("once")
    assert (replaced.schedule.at, replaced.payload) == (soon + timedelta(hours=1), b"v2")


async def test_an_apply_that_lost_a_race_is_refused_not_overwritten(client: AsyncClient) -> None:
    job = (await client.create_job("raced", "t", wheel.cron("0 9 * * *"))).job
    wanted = [wheel.NewJob("raced", "t", wheel.cron("0 10 * * *"))]
    planned = await client.apply_jobs(wanted, dry_run=True)
    # Another apply (or a person) edits the job between this plan and its write.
    await client.update_job(job.id, expected_version=job.version, schedule=wheel.cron("0 11 * * *"))
    from wheel.client import apply as applying

    with pytest.raises(VersionConflict):
        await applying.apply(client, planned)
    assert (await client.get_job("raced")).schedule.cron == "0 11 * * *"


async def test_a_list_naming_a_job_twice_is_refused_before_anything(client: AsyncClient) -> None:
    twice = [wheel.NewJob("a", "t", wheel.cron("0 9 * * *"))] * 2
    with pytest.raises(InvalidArgument) as caught:
        await client.apply_jobs(twice)
    assert caught.value.field == "jobs[1].name"
    assert [job async for job in client.jobs()] == []


async def test_wheel_jobs_apply_with_a_toml_file(
    node: SchedulerNode, token: str, tmp_path: Path
) -> None:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}
    path = tmp_path / "jobs.toml"
    path.write_text(
        '[jobs.nightly-report]\ntask = "reports.nightly"\ncron = "30 1 * * *"\n'
        'tz = "Europe/London"\nmax_attempts = 5\n\n'
        '[jobs.hello]\ntask = "example.hello"\ncron = "*/10 * * * * *"\npayload = "hi"\n'
    )

    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(jobs, ["apply", "-f", str(path), *args], env=env)
        return result.exit_code, result.output

    code, out = await asyncio.to_thread(run, "--dry-run")
    assert code == 0, out
    assert "would apply: 2 create" in out
    code, out = await asyncio.to_thread(run)
    assert (code, "applied: 2 create" in out) == (0, True), out
    code, out = await asyncio.to_thread(run, "--output", "json")
    changes = json.loads(out)["changes"]
    assert {(c["name"], c["action"]) for c in changes} == {
        ("nightly-report", "unchanged"), ("hello", "unchanged"),
    }  # fmt: skip
    path.write_text('[jobs.hello]\ntask = "example.hello"\ncron = "*/20 * * * * *"\n')
    code, out = await asyncio.to_thread(run, "--prune")
    assert code == 0, out
    assert "applied: 1 update, 1 delete" in out
    path.write_text('[jobs.hello]\ntask = "example.hello"\ncorn = "* * * * *"\n')
    code, out = await asyncio.to_thread(run)
    assert code == 2
    assert "[jobs.hello]: 'corn' is not a job option" in out
