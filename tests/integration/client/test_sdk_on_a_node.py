"""The SDK and the CLI against a real node: the contract the unit tests' fake stands in for."""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from click.testing import Result as CliResult

import wheel
from tests.integration.scheduler.scripted_executor import connected
from wheel.cli.cluster import executors as executors_command
from wheel.cli.cluster import nodes as nodes_command
from wheel.cli.jobs import executions, jobs
from wheel.client import AsyncClient, Verdict
from wheel.client.types import ExecutorInfo
from wheel.errors import (
    InvalidArgument,
    InvalidTransition,
    NameTaken,
    NotFound,
    Unauthenticated,
    VersionConflict,
)
from wheel.model.executions import ExecutionStatus, Trigger
from wheel.model.jobs import JobStatus, Policies
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


@pytest.fixture
def refusing() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
async def client(node: SchedulerNode, token: str, refusing: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient([refusing, node.address], token=token) as opened:
        yield opened


async def test_jobs_through_the_sdk(client: AsyncClient) -> None:
    end = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1000)
    schedule = wheel.cron("30 1 * * *", "Europe/London", end=end)
    created = await client.create_job(
        "nightly", "reports.nightly", schedule, payload=b"{}", policies=Policies(max_attempts=4)
    )
    job = created.job
    assert (job.schedule, job.policies.max_attempts, job.status) == (schedule, 4, JobStatus.ACTIVE)
    assert len(created.next_runs) == 5
    assert (await client.get_job(job.id)) == job
    assert job.id in [item.id async for item in client.jobs()]

    updated = await client.update_job(
        job.id, expected_version=job.version, schedule=wheel.cron("0 7 * * *", "Europe/Paris")
    )
    assert updated.version > job.version
    assert updated.name == "nightly"
    assert updated.payload == b"{}"
    with pytest.raises(VersionConflict) as stale:
        await client.update_job(job.id, expected_version=job.version, name="stale")
    assert (stale.value.expected, stale.value.current) == (job.version, updated.version)

    assert (await client.pause_job(job.id)).status is JobStatus.PAUSED
    assert (await client.pause_job(job.id)).status is JobStatus.PAUSED
    with pytest.raises(InvalidTransition) as paused:
        await client.trigger_job(job.id)
    assert (paused.value.state, paused.value.operation) == ("paused", "trigger")
    assert (await client.resume_job(job.id)).status is JobStatus.ACTIVE

    previewed = await client.preview_schedule(
        wheel.cron("30 1 * * *", "Europe/London"),
        count=3,
        after=datetime(2027, 3, 26, tzinfo=UTC),
    )
    assert [run.note is not None for run in previewed] == [False, False, True]


async def test_executions_through_the_sdk(client: AsyncClient) -> None:
    job = (await client.create_job("later", "t", wheel.cron("0 0 1 1 *"))).job
    at = datetime.now(UTC) + timedelta(hours=1)
    triggered = await client.trigger_job(job.id, at=at)
    assert triggered.trigger is Trigger.MANUAL
    assert triggered.scheduled_for == at
    assert (await client.trigger_job(job.id, at=at)).id == triggered.id
    page = await client.list_executions(job_id=job.id, statuses=["pending"])
    assert triggered.id in [item.id for item in page.items]
    assert (await client.get_execution(triggered.id)).status is ExecutionStatus.PENDING
    explanation = await client.explain_execution(triggered.id)
    assert explanation.verdict is Verdict.WAITING
    assert explanation.summary
    cancelled = await client.cancel_execution(triggered.id)
    assert cancelled.status is ExecutionStatus.CANCELLED
    assert (await client.cancel_execution(triggered.id)).status is ExecutionStatus.CANCELLED
    with pytest.raises(InvalidTransition):
        await client.retry_execution(triggered.id)
    off = await client.explain_occurrence(job.id, datetime(2031, 6, 1, 12, 0, tzinfo=UTC))
    assert off.verdict is Verdict.NOT_AN_OCCURRENCE
    daily = (await client.create_job("daily", "t", wheel.cron("0 3 * * *"))).job
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start, end = today - timedelta(days=3), today - timedelta(days=2)
    backfill = await client.backfill_job(daily.id, start, end)
    assert backfill.created_ids == (f"{daily.id}@{start:%Y%m%d}T030000.000000Z",)
    again = await client.backfill_job(daily.id, start, end)
    assert again.existing_ids == backfill.created_ids


async def test_errors_come_back_typed(client: AsyncClient, node: SchedulerNode) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await client.create_job("bad", "t", wheel.cron("61 * * * *"))
    assert caught.value.field == "schedule.cron.expression"
    with pytest.raises(NotFound):
        await client.get_job(uuid.uuid4())
    async with AsyncClient(node.address, token="whl_not_a_token") as stranger:
        with pytest.raises(Unauthenticated):
            await stranger.list_jobs()
    nodes = await client.nodes()
    assert [item.node_id for item in nodes] == [node.config.node_id]
    assert len(await client.partitions()) == node.config.partitions


async def test_the_cli_on_a_node(node: SchedulerNode, token: str) -> None:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}

    def invoke(group: object, *args: str) -> str:
        result = CliRunner().invoke(group, list(args), env=env)  # type: ignore[arg-type]
        assert result.exit_code == 0, result.output
        return result.stdout

    # The node serves from this test's loop: the blocking CLI runs in a thread.
    created = json.loads(
        await asyncio.to_thread(
            invoke,
            jobs,
            "create",
            "cli",
            "--task",
            "t",
            "--cron",
            "30 1 * * *",
            "--tz",
            "Europe/London",
            "--output",
            "json",
        )
    )
    job_id = created["job"]["id"]
    shown = await asyncio.to_thread(invoke, jobs, "get", job_id)
    assert "cron '30 1 * * *' in Europe/London" in shown
    updated = await asyncio.to_thread(
        invoke, jobs, "update", job_id, "--version", str(created["job"]["version"]), "--tz", "UTC"
    )
    assert "cron '30 1 * * *' in UTC" in updated
    listed = await asyncio.to_thread(invoke, executions, "list", "--job", job_id)
    assert "id" in listed


async def test_many_jobs_at_once_through_the_sdk(client: AsyncClient, store: Store) -> None:
    soon = datetime.now(UTC) + timedelta(hours=1)
    many = [wheel.NewJob(f"remind-{n}", "reminders.send", wheel.at(soon + timedelta(seconds=n)),
                         payload=str(n).encode(), job_id=uuid.uuid4())
            for n in range(2500)]  # fmt: skip
    created = await client.create_jobs(many, batch_size=1000)
    assert [j.name for j in created] == [j.name for j in many], "in the order given"
    assert [str(j.id) for j in created] == [str(j.job_id) for j in many]
    assert created[1234].payload == b"1234", "payloads as given (the server does not echo them)"
    again = await client.create_jobs(many[:1500], batch_size=700)
    assert [j.id for j in again] == [j.id for j in created[:1500]], "repeatable: made once"

    later = [wheel.NewJob(f"late-{n}", "t", wheel.cron("0 6 * * *")) for n in range(30)]
    later[17] = wheel.NewJob("late-17", "t", wheel.cron("0 6 * * 8"))
    with pytest.raises(InvalidArgument) as bad:
        await client.create_jobs(later, batch_size=10, concurrency=1)
    assert bad.value.field == "jobs[17].schedule.cron.expression", "counted in the whole input"
    names = {job.name async for job in client.jobs()}
    assert {f"late-{n}" for n in range(10)} <= names, "the batch before it was created"
    assert not any(f"late-{n}" in names for n in range(10, 30)), "its batch and those after: not"
    with pytest.raises(InvalidArgument) as unnamed:
        await client.create_jobs([*later[:3], wheel.NewJob(" ", "t", wheel.now())])
    assert unnamed.value.field == "jobs[3].name", "refused before anything is sent"


async def test_the_cli_creates_the_jobs_of_a_file(
    node: SchedulerNode, token: str, tmp_path: Path
) -> None:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()  # "now+1h" would move on a retry
    lines = [json.dumps({"name": f"file-{n}", "task": "t", "at": soon, "payload": f"p{n}",
                         "job-id": str(uuid.uuid4()), "max_attempts": 5})
             for n in range(40)]  # fmt: skip
    lines.insert(7, "")
    lines.append(json.dumps({"name": "nightly", "task": "t", "cron": "30 1 * * *",
                             "tz": "Europe/London", "overlap": "queue", "now": False}))  # fmt: skip
    good = tmp_path / "jobs.jsonl"
    good.write_text("\n".join(lines) + "\n")

    def invoke(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(jobs, list(args), env=env)
        return result.exit_code, result.output

    def ids_of(*args: str) -> list[str]:
        result = CliRunner().invoke(jobs, list(args), env=env)
        assert result.exit_code == 0, result.output
        return result.stdout.split()

    ids = await asyncio.to_thread(ids_of, "create", "--file", str(good), "--output", "id")
    assert len(ids) == 41
    again = await asyncio.to_thread(ids_of, "create", "--file", str(good), "--output", "id")
    assert again[:40] == ids[:40], "the file's ids: repeating it makes nothing twice"

    for content, complaint in (
        ('{"name": "x", "task": "t", "cron": "61 * * * *"}', "line 1: schedule.cron"),
        ('{"name": "x", "task": "t", "at": "yesterday"}', "line 1: at:"),
        ('{"name": "x", "task": "t", "now": true}\n[1]', "line 2: each line must be a JSON object"),
        ('{"name": "x", "tsak": "t", "now": true}', "line 1: 'tsak' is not a job option"),
        ('{"name": "x", "now": true}', "line 1: 'task' (or 'http', a URL) is required"),
        ('{"name": "x", "task": "t"}', "line 1: give a schedule"),
        ("", "no jobs in the file"),
    ):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(content)
        code, out = await asyncio.to_thread(invoke, "create", "--file", str(bad))
        assert code == 2, out
        assert complaint in out, out
    code, out = await asyncio.to_thread(invoke, "create", "x", "--file", str(good))
    assert code == 2
    assert "not NAME" in out


async def test_jobs_by_name_through_the_sdk_and_the_cli(
    client: AsyncClient, node: SchedulerNode, token: str
) -> None:
    schedule = wheel.cron("0 9 * * 1", "Europe/London")
    first = (await client.create_job("weekly-digest", "digest.send", schedule)).job
    again = (await client.create_job("weekly-digest", "digest.send", schedule)).job
    assert again.id == first.id, "running the snippet twice makes one job"
    with pytest.raises(NameTaken) as taken:
        await client.create_job("weekly-digest", "digest.send", wheel.cron("0 9 * * 2"))
    assert (taken.value.name, taken.value.field) == ("weekly-digest", "name")
    assert (await client.get_job("weekly-digest")).id == first.id
    assert (await client.pause_job("weekly-digest")).status is JobStatus.PAUSED
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}

    def invoke(*args: str) -> CliResult:
        return CliRunner().invoke(jobs, list(args), env=env)

    shown = await asyncio.to_thread(invoke, "get", "weekly-digest", "--output", "json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["id"] == str(first.id)
    resumed = await asyncio.to_thread(invoke, "resume", "weekly-digest", "--output", "json")
    assert json.loads(resumed.stdout)["status"] == "active"
    missing = await asyncio.to_thread(invoke, "get", "no-such-job")
    assert missing.exit_code == 1
    assert "job 'no-such-job' not found" in missing.output


async def test_the_cluster_at_a_glance_through_the_sdk_and_the_cli(
    client: AsyncClient, node: SchedulerNode, token: str
) -> None:
    executor = await connected(node, executor_id="glance", capacity=3)
    try:

        async def streaming() -> ExecutorInfo:
            while True:  # the node publishes its executors about once a second
                found = [e for e in await client.executors() if e.executor_id == "glance"]
                if found and found[0].links:
                    return found[0]
                await asyncio.sleep(0.1)

        seen = await asyncio.wait_for(streaming(), 15)
        (link,) = seen.links
        assert (link.node_id, link.in_flight) == (node.config.node_id, 0)
        assert link.credit == {"default": 3}
        assert link.connected_at is not None
        env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}
        listed = await asyncio.to_thread(CliRunner().invoke, executors_command, [], env=env)
        assert listed.exit_code == 0, listed.output
        assert "glance" in listed.output
        assert node.config.node_id in listed.output
        shown = await asyncio.to_thread(CliRunner().invoke, nodes_command, [], env=env)
        assert node.address in shown.output
    finally:
        await executor.stop()


async def test_executions_list_shows_what_ran_with_names_and_upcoming_shows_what_is_next(
    client: AsyncClient, node: SchedulerNode, token: str
) -> None:
    job = (await client.create_job("hourly-report", "t", wheel.cron("0 * * * *"))).job
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    await client.backfill_job("hourly-report", end - timedelta(hours=3), end)
    now = datetime.now(UTC).replace(microsecond=0)
    later = [(await client.trigger_job("hourly-report", at=now + timedelta(minutes=m))).id
             for m in (20, 10)]  # fmt: skip
    upcoming = await client.list_executions(job_id=job.id, scheduled_after=now, oldest_first=True)
    soonest = [e.scheduled_for for e in upcoming.items]
    assert soonest == sorted(soonest)
    assert set(later) <= {e.id for e in upcoming.items}
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "250"}

    def run(*args: str) -> str:
        result = CliRunner().invoke(executions, ["list", *args], env=env)
        assert result.exit_code == 0, result.output
        return result.output

    ran = await asyncio.to_thread(run)
    assert "hourly-report" in ran, "the job's name, not its id"
    assert not any(ident in ran for ident in later), "the future's runs are not what ran"
    assert str(end - timedelta(hours=1)).split("+")[0] in ran, "date and time, a space between"
    next_up = await asyncio.to_thread(run, "--upcoming", "--output", "id")
    assert next_up.splitlines()[0] == upcoming.items[0].id


async def test_a_job_shows_its_last_run_and_when_it_runs_next(
    client: AsyncClient, store: Store, node: SchedulerNode, token: str
) -> None:
    now = datetime.now(UTC)
    made_job = (await client.create_job("every-hour", "t", wheel.cron("0 * * * *"))).job
    job = await client.get_job(made_job.id, with_runs=True)
    assert job.last_run is None
    next_hour = job.next_run_at
    assert next_hour is not None
    assert (next_hour.minute, next_hour.second) == (0, 0)
    assert now < next_hour <= now + timedelta(hours=1, seconds=5), "the next whole hour"
    end = now.replace(minute=0, second=0, microsecond=0)
    made = await client.backfill_job("every-hour", end - timedelta(hours=2), end)
    ran = (await client.get_job("every-hour", with_runs=True)).last_run
    assert ran is None, "pending runs have not run"
    async with store.pool.connection() as conn:  # as the recorder would, for the earlier one
        await conn.execute(
            "UPDATE executions SET status = 'succeeded', started_at = now(), finished_at = now()"
            " WHERE job_id = %s AND scheduled_for = %s",
            (job.id, end - timedelta(hours=2)),
        )
    got = await client.get_job("every-hour", with_runs=True)
    assert got.last_run is not None
    assert (got.last_run.execution_id, got.last_run.status) == (made.created_ids[0], "succeeded")
    assert got.last_run.finished_at is not None
    listed = [j async for j in client.jobs(with_runs=True) if j.name == "every-hour"]
    assert (listed[0].last_run, listed[0].next_run_at) == (got.last_run, next_hour)
    paused = await client.pause_job("every-hour")
    assert (await client.get_job(paused.id, with_runs=True)).next_run_at is None, (
        "paused: nothing is next"
    )
    at = (now + timedelta(hours=3)).replace(microsecond=0)
    once = (await client.create_job("once-later", "t", wheel.at(at))).job
    assert (await client.get_job(once.id, with_runs=True)).next_run_at == at
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "250"}
    shown = await asyncio.to_thread(CliRunner().invoke, jobs, ["list"], env=env)
    assert "succeeded (" in shown.output
    assert (await client.get_job("every-hour")).last_run is None, "asked for: a lean get"
