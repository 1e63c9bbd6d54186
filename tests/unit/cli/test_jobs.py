"""`wheel jobs` and `wheel executions` against a fake API: what they send and print."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.unit.cli.invoking import WIDE, ok, run
from tests.unit.client.fake_api import DST_NOTE, NOW, FakeApi
from tests.unit.client.helpers import TOKEN, seed_job
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api.convert import policies_from, schedule_from, schedule_to
from wheel.cli import main as cli
from wheel.cli.jobs import executions, jobs
from wheel.client import every
from wheel.errors import InvalidArgument, Unauthenticated
from wheel.model.jobs import DstFold, IntervalDst, MisfirePolicy, OverlapPolicy, ScheduleKind
from wheel.timestamps import to_datetime

# -- jobs ----------------------------------------------------------------------------------


def test_create_sends_the_schedule_policies_and_payload(address: str, api: FakeApi) -> None:
    output = ok(
        run(jobs, address, "create", "nightly", "--task", "reports.nightly",
            "--cron", "30 1 * * *", "--tz", "Europe/London", "--smear", "1m30s",
            "--start", "2027-01-01T00:00:00Z", "--dst-gap", "SKIP",
            "--payload", '{"to": "ops"}', "--max-attempts", "5", "--backoff-base", "2s",
            "--not-idempotent", "--misfire", "fire_all", "--overlap", "queue",
            "--timeout", "10m", "--priority", "-3", "--pool", "reports", "--preview", "3",
            "--notify-url", "https://hooks.example.com/reports?team=ops")
    )  # fmt: skip
    (call,) = api.called("CreateJob")
    assert call.metadata["authorization"] == f"Bearer {TOKEN}"
    request = call.request
    sent = schedule_from(request.schedule)
    assert (sent.cron, sent.time_zone, sent.smear) == ("30 1 * * *", "Europe/London",
                                                      timedelta(seconds=90))  # fmt: skip
    assert sent.starts_at == datetime(2027, 1, 1, tzinfo=UTC)
    assert sent.dst_gap.value == "skip"
    sent_policies = policies_from(request.policies)
    assert sent_policies.max_attempts == 5
    assert sent_policies.backoff_base == timedelta(seconds=2)
    assert sent_policies.idempotent is False
    assert sent_policies.misfire is MisfirePolicy.FIRE_ALL
    assert sent_policies.overlap is OverlapPolicy.QUEUE
    assert sent_policies.timeout == timedelta(minutes=10)
    assert (sent_policies.priority, sent_policies.pool) == (-3, "reports")
    assert sent_policies.notify_url == "https://hooks.example.com/reports?team=ops"
    assert "notifies https://hooks.example.com/reports?…" in output
    assert request.payload == b'{"to": "ops"}'
    assert request.preview == 3
    job_id = request.job_id
    assert job_id in output
    assert "cron '30 1 * * *' in Europe/London, smear 1m30s" in output
    assert "5 attempts, backoff 2s..5m, not idempotent, misfire fire_all" in output
    assert "next runs" in output
    assert DST_NOTE in output


def test_create_an_interval_job(address: str, api: FakeApi) -> None:
    output = ok(
        run(jobs, address, "create", "sync", "--task", "crm.sync", "--every", "90m",
            "--anchor", "2026-01-05T09:00:00+00:00", "--interval-dst", "wall",
            "--tz", "Europe/London", "--dst-fold", "both", "--overlap", "queue")
    )  # fmt: skip
    sent = schedule_from(api.called("CreateJob")[0].request.schedule)
    assert sent.kind is ScheduleKind.INTERVAL
    assert sent.every == timedelta(minutes=90)
    assert sent.anchor == datetime(2026, 1, 5, 9, tzinfo=UTC)
    assert sent.interval_dst is IntervalDst.WALL
    assert (sent.time_zone, sent.dst_fold) == ("Europe/London", DstFold.BOTH)
    assert "every 90 minutes by the wall clock in Europe/London, from 2026-01-05 09:00" in output
    assert "did you mean" not in output


def test_update_keeps_the_interval_and_changes_what_is_named(address: str, api: FakeApi) -> None:
    seeded = seed_job(api)
    seeded.schedule.CopyFrom(schedule_to(every(timedelta(minutes=15), "Europe/Paris")))
    ok(run(jobs, address, "update", seeded.id, "--version", "3", "--interval-dst", "wall"))
    sent = schedule_from(api.called("UpdateJob")[0].request.job.schedule)
    assert (sent.every, sent.time_zone) == (timedelta(minutes=15), "Europe/Paris")
    assert sent.interval_dst is IntervalDst.WALL
    ok(run(jobs, address, "update", seeded.id, "--version", "4", "--cron", "0 * * * *"))
    assert schedule_from(api.called("UpdateJob")[1].request.job.schedule).cron == "0 * * * *"


def test_create_as_json(address: str, api: FakeApi) -> None:
    output = ok(run(jobs, address, "create", "once", "--task", "t", "--now", "--output", "json"))
    document = json.loads(output)
    job = document["job"]
    assert job["id"] == api.called("CreateJob")[0].request.job_id
    assert job["schedule"]["kind"] == "now"
    assert job["status"] == "active"
    assert job["payload_base64"] == ""
    assert job["policies"]["timeout_s"] == 3600
    assert job["created_at"] == NOW.isoformat()
    assert len(document["next_runs"]) == 5
    assert document["next_runs"][1]["note"] == DST_NOTE
    assert datetime.fromisoformat(document["next_runs"][0]["instant"]) == NOW + timedelta(hours=1)


def test_payload_from_a_file(address: str, api: FakeApi, tmp_path: Path) -> None:
    path = tmp_path / "payload.bin"
    path.write_bytes(b"\x00\x01binary")
    ok(run(jobs, address, "create", "b", "--task", "t", "--now", "--payload-file", str(path)))
    assert api.called("CreateJob")[0].request.payload == b"\x00\x01binary"


@pytest.mark.parametrize(
    ("args", "option", "reason"),
    [
        (["--now", "--smear", "30x"], "--smear", "'30x' is not a duration"),
        (["--now", "--timeout", "1h30"], "--timeout", "is not a duration"),
        (["--at", "2027-01-01T00:00:00"], "--at", "needs a UTC offset"),
        (["--at", "tomorrow"], "--at", "not an ISO 8601 instant"),
        (["--now", "--max-attempts", "0"], "--max-attempts", "0 is not in 1-100"),
        (["--now", "--backoff-base", "10m", "--backoff-cap", "1m"], "--backoff-cap",
         "must not be below backoff_base"),
        (["--cron", "0 * * * *", "--start", "2027-01-02T00:00:00Z", "--end",
          "2027-01-01T00:00:00Z"], "--end", "must be after"),
        (["--now", "--misfire", "sometimes"], "--misfire", "'sometimes' is not one of"),
        (["--now", "--pool", " "], "--pool", "must not be empty"),
        (["--now", "--notify-url", "ftp://h.example/"], "--notify-url", "must start with http"),
        (["--every", "0s"], "--every", "must be at least 1 second"),
        (["--every", "500ms"], "--every", "must be at least 1 second"),
        (["--every", "367d"], "--every", "must be at most 366 days"),
        (["--every", "soon"], "--every", "'soon' is not a duration"),
        (["--every", "1h", "--anchor", "teatime"], "--anchor", "not an ISO 8601 instant"),
        (["--every", "1h", "--anchor", "2027-01-01T09:00:00"], "--anchor", "needs a UTC offset"),
        (["--every", "1h", "--interval-dst", "sideways"], "--interval-dst", "is not one of"),
        (["--every", "1h", "--dst-gap", "skip"], "--dst-gap", "only for wall-clock spacing"),
    ],
)  # fmt: skip
def test_a_bad_value_is_a_usage_error_naming_its_option(
    address: str, api: FakeApi, args: list[str], option: str, reason: str
) -> None:
    result = run(jobs, address, "create", "n", "--task", "t", *args)
    assert result.exit_code == 2, result.output
    assert f"'{option}'" in result.stderr
    assert reason in result.stderr
    assert api.calls == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a schedule"),
        (["--now", "--cron", "* * * * *"], "give one of --now, --at, --cron and --every"),
        (["--cron", "* * * * *", "--every", "5m"], "give one of --now, --at, --cron and --every"),
        (["--now", "--tz", "Europe/Paris"], "--tz: only for a --cron or --every schedule"),
        (["--smear", "5m"], "--smear: only for a --cron or --every schedule"),
        (
            ["--cron", "* * * * *", "--interval-dst", "wall"],
            "--interval-dst: only for an --every schedule",
        ),
        (["--anchor", "now"], "--anchor: only for an --every schedule"),
        (["--now", "--payload", "a", "--payload-file", "-"], "not both"),
    ],
)
def test_schedule_and_payload_options_are_checked(
    address: str, api: FakeApi, args: list[str], message: str
) -> None:
    result = run(jobs, address, "create", "n", "--task", "t", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert api.calls == []


def test_the_servers_refusal_names_the_option(address: str, api: FakeApi) -> None:
    api.fail("CreateJob", InvalidArgument("schedule.cron.expression", "6 fields is too many"))
    result = run(jobs, address, "create", "n", "--task", "t", "--cron", "* * * * * * *")
    assert result.exit_code == 2
    assert "Invalid value for '--cron': 6 fields is too many" in result.stderr


def test_wheel_errors_are_one_line_and_exit_1(address: str, api: FakeApi) -> None:
    missing = str(uuid.uuid4())
    result = run(jobs, address, "get", missing)
    assert result.exit_code == 1
    assert result.stderr == f"wheel: error: job {missing} not found\n"
    api.fail("ListJobs", Unauthenticated("the token is unknown or revoked"))
    result = run(jobs, address, "list")
    assert result.exit_code == 1
    assert result.stderr == "wheel: error: the token is unknown or revoked\n"
    assert TOKEN not in result.output


def test_get_list_and_page(address: str, api: FakeApi) -> None:
    seeded = [seed_job(api, f"job {n}") for n in range(3)]
    output = ok(run(jobs, address, "get", seeded[0].id))
    assert seeded[0].id in output
    assert '{"to": "ops"}' in output
    first = ok(run(jobs, address, "list", "--limit", "2", "--wide"))
    assert seeded[0].id in first
    assert seeded[2].id not in first
    assert "more: --page-token 2" in first
    rest = json.loads(ok(run(jobs, address, "list", "--page-token", "2", "--output", "json")))
    assert [item["name"] for item in rest["items"]] == ["job 2"]
    assert rest["next_page_token"] == ""


def test_output_id_prints_only_ids_for_scripts(address: str, api: FakeApi) -> None:
    seeded = [seed_job(api, f"job {n}") for n in range(3)]
    listed = ok(run(jobs, address, "list", "--output", "id"))
    assert listed.split() == [job.id for job in seeded]
    created = ok(run(jobs, address, "create", "once", "--task", "t", "--now", "--output", "id"))
    assert created.strip() == api.called("CreateJob")[0].request.job_id


def test_pause_resume_delete(address: str, api: FakeApi) -> None:
    ident = seed_job(api).id
    assert "job paused" in ok(run(jobs, address, "pause", ident))
    assert api.jobs[ident].status == pb.JOB_STATUS_PAUSED
    ok(run(jobs, address, "resume", ident))
    assert api.jobs[ident].status == pb.JOB_STATUS_ACTIVE
    document = json.loads(ok(run(jobs, address, "delete", ident, "--output", "json")))
    assert document["status"] == "deleted"


def test_update_changes_only_what_is_named(address: str, api: FakeApi) -> None:
    seeded = seed_job(api)
    output = ok(run(jobs, address, "update", seeded.id, "--version", "3", "--tz", "Europe/Paris",
                    "--max-attempts", "9", "--name", "renamed"))  # fmt: skip
    sent = api.called("UpdateJob")[0].request.job
    assert sent.version == 3
    assert sent.name == "renamed"
    assert sent.task_type == seeded.task_type
    assert sent.payload == seeded.payload
    schedule = schedule_from(sent.schedule)
    assert (schedule.cron, schedule.time_zone) == ("30 1 * * *", "Europe/Paris")
    assert policies_from(sent.policies).max_attempts == 9
    assert policies_from(sent.policies).timeout == policies_from(seeded.policies).timeout
    assert "job updated" in output
    assert "Europe/Paris" in output


def test_a_stale_update_is_refused(address: str, api: FakeApi) -> None:
    seeded = seed_job(api)
    result = run(jobs, address, "update", seeded.id, "--version", "2", "--pool", "other")
    assert result.exit_code == 1
    assert "is at version 3, not 2" in result.stderr
    assert "--version" in ok(CliRunner().invoke(jobs, ["update", "--help"]))
    missing = CliRunner().invoke(jobs, ["update", seeded.id, "--endpoint", "x:1"], env=WIDE)
    assert missing.exit_code == 2
    assert "'--version'" in missing.stderr


def test_preview_saves_nothing_and_notes_dst(address: str, api: FakeApi) -> None:
    output = ok(run(jobs, address, "preview", "--cron", "30 1 * * *", "--tz", "Europe/London",
                    "--count", "2", "--after", "2027-03-27T12:00:00+00:00"))  # fmt: skip
    request = api.called("PreviewSchedule")[0].request
    assert request.count == 2
    assert to_datetime(request.after) == NOW
    assert DST_NOTE in output
    assert "Europe/London" in output
    assert api.jobs == {}
    runs = json.loads(ok(run(jobs, address, "preview", "--now", "--output", "json")))
    assert len(runs) == 5


def test_trigger_and_backfill(address: str, api: FakeApi) -> None:
    ident = seed_job(api).id
    output = ok(run(jobs, address, "trigger", ident, "--at", "2027-04-01T09:00:00+02:00"))
    assert f"{ident}@20270401T070000.000000Z" in output
    assert "manual" in output
    start = datetime(2027, 3, 1, tzinfo=UTC)
    api.add_execution(ident, start, pb.EXECUTION_STATUS_SUCCEEDED)
    output = ok(run(jobs, address, "backfill", ident, "--from", "2027-03-01T00:00:00Z",
                    "--to", "2027-03-01T03:00:00Z"))  # fmt: skip
    assert "2 created, 1 existed" in output
    assert f"existed  {ident}@20270301T000000.000000Z" in output


# -- executions ----------------------------------------------------------------------------


def _executions(api: FakeApi) -> tuple[str, pb.Execution, pb.Execution]:
    ident = seed_job(api).id
    dead = api.add_execution(
        ident, NOW, pb.EXECUTION_STATUS_DEAD, attempt=1, error="boom",
        attempts=[pb.Attempt(number=1, executor_id="ex-7", fence=11, outcome="failed",
                             error="boom")],
    )  # fmt: skip
    pending = api.add_execution(ident, NOW + timedelta(hours=1), pb.EXECUTION_STATUS_PENDING)
    return ident, dead, pending


def test_list_executions_filters(address: str, api: FakeApi) -> None:
    ident, dead, pending = _executions(api)
    output = ok(run(executions, address, "list", "--job", ident, "--status", "dead",
                    "--status", "NEEDS_REVIEW", "--after", "2027-03-01T00:00:00Z"))  # fmt: skip
    request = api.called("ListExecutions")[0].request
    assert request.job_id == ident
    assert list(request.statuses) == [pb.EXECUTION_STATUS_DEAD, pb.EXECUTION_STATUS_NEEDS_REVIEW]
    assert to_datetime(request.scheduled_after) == datetime(2027, 3, 1, tzinfo=UTC)
    assert dead.id in output
    assert pending.id not in output
    page = json.loads(ok(run(executions, address, "list", "--output", "json")))
    assert {item["id"] for item in page["items"]} == {dead.id, pending.id}
    result = run(executions, address, "list", "--status", "finished")
    assert result.exit_code == 2
    assert "'--status'" in result.stderr


def test_get_retry_cancel(address: str, api: FakeApi) -> None:
    _, dead, pending = _executions(api)
    output = ok(run(executions, address, "get", dead.id))
    assert "attempts" in output
    assert "ex-7" in output
    document = json.loads(ok(run(executions, address, "get", dead.id, "--output", "json")))
    assert document["attempts"][0]["fence"] == 11
    assert document["scheduled_for"] == NOW.isoformat()
    assert "pending" in ok(run(executions, address, "retry", dead.id))
    assert "cancelled by a user" in ok(run(executions, address, "cancel", pending.id))
    again = run(executions, address, "retry", pending.id)
    assert again.exit_code == 1
    assert "cannot retry execution" in again.stderr


def test_explain_by_id_or_by_occurrence(address: str, api: FakeApi) -> None:
    ident, dead, _ = _executions(api)
    output = ok(run(executions, address, "explain", dead.id))
    assert output.startswith("DEAD: 3 attempts failed")
    assert "materialised" in output
    document = json.loads(ok(run(executions, address, "explain", "--job", ident,
                                 "--at", "2027-03-27T12:01:00Z", "--output", "json")))  # fmt: skip
    assert document["verdict"] == "not_an_occurrence"
    assert document["execution"] is None
    for args in ([], ["--job", ident], [dead.id, "--job", ident]):
        result = run(executions, address, "explain", *args)
        assert result.exit_code == 2
        assert "give EXECUTION_ID, or --job and --at" in result.stderr


# -- connection options ----------------------------------------------------------------------


def test_endpoints_and_token_from_the_environment(address: str, api: FakeApi) -> None:
    env = {**WIDE, "WHEEL_ENDPOINTS": f"127.0.0.1:1,{address}", "WHEEL_TOKEN": "whl_env"}
    result = CliRunner().invoke(jobs, ["list"], env=env)
    assert result.exit_code == 0, result.output
    assert api.calls[0].metadata["authorization"] == "Bearer whl_env"


def test_a_config_file_below_flags_and_environment(
    address: str, api: FakeApi, tmp_path: Path
) -> None:
    config = tmp_path / "wheel.toml"
    config.write_text(f'endpoint = ["{address}"]\ntoken = "whl_file"\noutput = "json"\n')
    result = CliRunner().invoke(jobs, ["list", "--config", str(config)], env=WIDE)
    assert json.loads(result.stdout) == {"items": [], "next_page_token": ""}
    assert api.calls[-1].metadata["authorization"] == "Bearer whl_file"
    env = {**WIDE, "WHEEL_TOKEN": "whl_env"}
    result = CliRunner().invoke(jobs, ["list", "--config", str(config), "--output", "table"],
                                env=env)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "next_page_token" not in result.stdout
    assert api.calls[-1].metadata["authorization"] == "Bearer whl_env"
    config.write_text('endpoints = "typo:1"\n')
    result = CliRunner().invoke(jobs, ["list", "--config", str(config)], env=WIDE)
    assert result.exit_code == 2
    assert "config.endpoints: not an option" in result.stderr


def test_connection_problems_are_named(tmp_path: Path) -> None:
    result = CliRunner().invoke(jobs, ["list"], env=WIDE)
    assert result.exit_code == 2
    assert "no endpoint" in result.stderr
    result = CliRunner().invoke(jobs, ["list", "--endpoint", "nohost"], env=WIDE)
    assert result.exit_code == 2
    assert "Invalid value for '--endpoint': 'nohost' is not host:port" in result.stderr
    result = CliRunner().invoke(jobs, ["list", "--endpoint", "a:1", "--tls-ca",
                                       str(tmp_path / "none.pem")], env=WIDE)  # fmt: skip
    assert result.exit_code == 2
    assert "'--tls-ca'" in result.stderr


def test_the_wheel_command_runs_them(address: str, api: FakeApi, monkeypatch: Any) -> None:
    monkeypatch.setattr("wheel.cli.main.logs.configure", lambda level: None)
    ident = seed_job(api).id
    result = CliRunner().invoke(cli.cli, ["jobs", "get", ident, "--endpoint", address], env=WIDE)
    assert result.exit_code == 0, result.output
    assert ident in result.stdout
    missing = str(uuid.uuid4())
    process = subprocess.run(
        [sys.executable, "-m", "wheel", "executions", "get", f"{missing}@20270101T000000.000000Z",
         "--endpoint", address],
        env={**os.environ, **WIDE}, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert process.returncode == 1, process.stderr
    expected = f"wheel: error: execution {missing}@20270101T000000.000000Z not found\n"
    assert process.stderr == expected


def test_error_text_is_shown_as_written_never_as_markup(address: str, api: FakeApi) -> None:
    ident = seed_job(api).id
    error = "FileNotFoundError: [/tmp/in.csv] missing [bold]x[/bold]\n  File ..."
    dead = api.add_execution(
        ident, NOW, pb.EXECUTION_STATUS_DEAD, attempt=1, error=error,
        attempts=[pb.Attempt(number=1, executor_id="ex-7", fence=1, outcome="failed",
                             error=error)],
    )  # fmt: skip
    listed = ok(run(executions, address, "list"))
    assert "[/tmp/in.csv] missing [bold]x[/bold]" in listed
    assert "File ..." not in listed, "lists show an error's first line"
    shown = ok(run(executions, address, "get", dead.id))
    assert "[/tmp/in.csv]" in shown
