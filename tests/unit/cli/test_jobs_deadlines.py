"""`--deadline`, `--no-deadline` and `--notify-after-failures` on `wheel jobs` and in files."""

from __future__ import annotations

import io
from datetime import timedelta

import click
import pytest

from tests.unit.cli.invoking import run
from tests.unit.client.fake_api import FakeApi
from tests.unit.client.helpers import seed_job
from wheel.api.convert import policies_from, policies_to
from wheel.cli.jobs import jobs
from wheel.cli.jobs_file import read_toml
from wheel.model.jobs import Policies


def test_create_sends_the_deadline_and_the_streak_length(address: str, api: FakeApi) -> None:
    result = run(jobs, address, "create", "n", "--task", "t", "--cron", "0 9 * * *",
                 "--deadline", "30m", "--notify-after-failures", "3")  # fmt: skip
    assert result.exit_code == 0, result.output
    sent = policies_from(api.called("CreateJob")[0].request.policies)
    assert (sent.deadline, sent.notify_after_failures) == (timedelta(minutes=30), 3)
    assert "deadline 30m, notify after 3 failures" in result.stdout


@pytest.mark.parametrize(
    ("args", "option", "reason"),
    [
        (["--deadline", "500ms"], "--deadline", "between 1s and 366 days"),
        (["--deadline", "367d"], "--deadline", "between 1s and 366 days"),
        (["--notify-after-failures", "1001"], "--notify-after-failures", "not in 0-1000"),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_its_option(
    address: str, api: FakeApi, args: list[str], option: str, reason: str
) -> None:
    result = run(jobs, address, "create", "n", "--task", "t", "--now", *args)
    assert result.exit_code == 2, result.output
    assert f"'{option}'" in result.stderr
    assert reason in result.stderr
    assert api.calls == []


def test_update_sets_and_removes_the_deadline(address: str, api: FakeApi) -> None:
    seeded = seed_job(api)
    seeded.policies.CopyFrom(policies_to(Policies(deadline=timedelta(hours=1))))
    result = run(jobs, address, "update", seeded.id, "--version", "3", "--no-deadline",
                 "--notify-after-failures", "2")  # fmt: skip
    assert result.exit_code == 0, result.output
    sent = policies_from(api.called("UpdateJob")[0].request.job.policies)
    assert (sent.deadline, sent.notify_after_failures) == (None, 2)
    both = run(
        jobs, address, "update", seeded.id, "--version", "3", "--no-deadline", "--deadline", "1m"
    )
    assert both.exit_code == 2
    assert "--deadline or --no-deadline" in both.stderr


def test_a_jobs_file_speaks_the_same_options() -> None:
    create = jobs.commands["create"]
    text = b'[jobs.nightly]\ntask = "t"\ncron = "0 9 * * *"\ndeadline = "30m"\n' \
           b"notify_after_failures = 3\n"  # fmt: skip
    (job,) = read_toml(io.BytesIO(text), create, click.Context(create))
    assert job.policies is not None
    assert (job.policies.deadline, job.policies.notify_after_failures) == (
        timedelta(minutes=30), 3,
    )  # fmt: skip
