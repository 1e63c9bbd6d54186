"""`-o` is `--output`; `-o jsonl` prints one JSON object a line; `wheel completion SHELL`
prints a script whose callback really completes (run here as the shell would run it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tests.unit.client.fake_api import NOW, FakeApi
from tests.unit.client.helpers import TOKEN, seed_job
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.cli.jobs import executions, jobs
from wheel.cli.main import cli

ENV = {"COLUMNS": "80", "WHEEL_ENDPOINTS": "", "WHEEL_TOKEN": ""}


def invoke(group: object, address: str, *args: str) -> tuple[str, str]:
    result = CliRunner().invoke(group, [*args, "--endpoint", address, "--token", TOKEN],
                                env=ENV)  # type: ignore[arg-type]  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def test_o_is_output(address: str, api: FakeApi) -> None:
    seeded = seed_job(api, "nightly")
    short, _ = invoke(jobs, address, "list", "-o", "json")
    assert json.loads(short)["items"][0]["id"] == seeded.id
    assert invoke(jobs, address, "list", "-o", "id")[0].split() == [seeded.id]


def test_jsonl_is_one_object_a_line_and_the_next_page_goes_to_stderr(
    address: str, api: FakeApi
) -> None:
    seeded = [seed_job(api, f"job-{n}") for n in range(3)]
    out, err = invoke(jobs, address, "list", "--limit", "2", "-o", "jsonl")
    lines = out.splitlines()
    assert [json.loads(line)["id"] for line in lines] == [job.id for job in seeded[:2]]
    assert all(isinstance(json.loads(line), dict) for line in lines)
    assert err == "more: --page-token 2\n"
    dead = api.add_execution(seeded[0].id, NOW, pb.EXECUTION_STATUS_DEAD, attempt=1)
    out, _ = invoke(executions, address, "list", "-o", "jsonl")
    (line,) = out.splitlines()
    assert json.loads(line)["id"] == dead.id
    out, _ = invoke(jobs, address, "get", "job-1", "-o", "jsonl")
    (line,) = out.splitlines()
    assert json.loads(line)["name"] == "job-1"


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o nosort -F"),
        ("zsh", "#compdef wheel"),
        ("fish", "complete --no-files --command wheel"),
    ],
)
def test_completion_prints_the_shells_script(shell: str, marker: str) -> None:
    result = CliRunner().invoke(cli, ["completion", shell], prog_name="wheel")
    assert result.exit_code == 0, result.output
    assert marker in result.stdout
    assert "_WHEEL_COMPLETE" in result.stdout


def test_completion_refuses_an_unknown_shell() -> None:
    result = CliRunner().invoke(cli, ["completion", "tcsh"], prog_name="wheel")
    assert result.exit_code == 2
    assert "'tcsh' is not one of 'bash', 'zsh', 'fish'" in result.stderr


def complete(words: str, cword: int) -> list[str]:
    """What bash's completion function gets back from `wheel` for `words`."""
    process = subprocess.run(
        [sys.executable, "-m", "wheel"], capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, "_WHEEL_COMPLETE": "bash_complete", "COMP_WORDS": words,
             "COMP_CWORD": str(cword)},
    )  # fmt: skip
    return [line.split(",", 1)[1] for line in process.stdout.splitlines()]


def test_the_script_completes_commands_subcommands_and_choices() -> None:
    assert complete("wheel jo", 1) == ["jobs"]
    assert "list" in complete("wheel jobs ", 2)
    assert complete("wheel jobs list -o js", 4) == ["json", "jsonl"]
    assert complete("wheel completion ", 2) == ["bash", "zsh", "fish"]
