"""`wheel --help` imports no command; a command imports what it needs and no more, and
its heavy modules (the store and psycopg, gRPC, the dev cluster, rich) only when it runs:
`wheel jobs --help` or `wheel tokens create --help` loads none of them.

The imports are read from `python -X importtime` of a real `wheel` process, so
they include everything the interpreter loaded, not only what a test can see.
"""

from __future__ import annotations

import os
import subprocess
import sys

import click
import pytest

from wheel.cli import executor as executor_cli
from wheel.cli.main import COMMANDS, cli
from wheel.executor.config import DEFAULT_HOLD

HEAVY_FOR_HELP = ("grpc", "psycopg", "psycopg_pool", "aiohttp", "rich", "wheel.store",
                  "wheel.dev", "wheel.client", "wheel.scheduler", "wheel.executor")  # fmt: skip
HEAVY_FOR_A_COMMANDS_HELP = ("grpc", "psycopg", "psycopg_pool", "aiohttp", "rich",
                             "wheel.store", "wheel.dev.cluster", "wheel.client",
                             "wheel.coordinator", "wheel.executor", "wheel.api")  # fmt: skip
# `wheel scheduler`'s and `wheel executor`'s options check etcd's settings, which live
# apart from the etcd client (no gRPC) for this reason.
LIGHT = {"wheel.coordinator", "wheel.coordinator.etcd_settings"}
NOT_FOR_A_CALL = ("psycopg", "psycopg_pool", "aiohttp", "wheel.store", "wheel.dev",
                  "wheel.scheduler", "wheel.executor", "wheel.coordinator")  # fmt: skip


def imported(*args: str) -> set[str]:
    """Every module a `wheel` process imported, by name."""
    process = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "wheel", *args],
        env={**os.environ, "COLUMNS": "80"}, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    lines = [line for line in process.stderr.splitlines() if line.startswith("import time:")]
    assert lines, process.stderr
    return {line.rsplit("|", 1)[1].strip() for line in lines[1:]}


def within(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == r or m.startswith(r + ".") for r in roots))


def test_help_imports_no_command() -> None:
    modules = imported("--help")
    assert "wheel.cli.main" in modules
    assert within(modules, HEAVY_FOR_HELP) == []


def test_a_call_imports_the_client_but_no_store_nor_dev_cluster() -> None:
    # Port 1 refuses at once: the call fails after the imports this test is about.
    modules = imported("jobs", "list", "--endpoint", "127.0.0.1:1", "--token", "whl_x")
    assert "wheel.client.aio" in modules
    assert within(modules, NOT_FOR_A_CALL) == []


def every_command() -> list[tuple[str, ...]]:
    """Each command's argv: `jobs`, and under a group each of its commands (`jobs create`)."""
    found: list[tuple[str, ...]] = []
    for name in sorted(COMMANDS):
        command = COMMANDS[name].load()
        found.append((name,))
        if isinstance(command, click.Group):
            found += [(name, sub) for sub in sorted(command.commands)]
    return found


@pytest.mark.parametrize("argv", every_command(), ids=" ".join)
def test_a_commands_help_imports_nothing_heavy(argv: tuple[str, ...]) -> None:
    modules = imported(*argv, "--help")
    assert within(modules - LIGHT, HEAVY_FOR_A_COMMANDS_HELP) == []
    assert within(modules, ("psycopg", "wheel.store", "wheel.dev.cluster")) == []


def test_a_call_outside_jobs_imports_the_session_not_the_job_options() -> None:
    modules = imported("nodes", "--endpoint", "127.0.0.1:1", "--token", "whl_x")
    assert "wheel.cli.session" in modules
    assert "wheel.client.aio" in modules
    assert "wheel.cli.jobs_options" not in modules
    assert within(modules, NOT_FOR_A_CALL) == []


def test_executor_help_shows_the_hold_the_config_defaults_to() -> None:
    # --help shows a string so as not to import the executor's config (and gRPC) for it.
    assert str(DEFAULT_HOLD) == executor_cli.HOLD_SHOWN
    hold = next(p for p in executor_cli.executor.params if p.name == "hold")
    assert hold.get_default(click.Context(executor_cli.executor)) == DEFAULT_HOLD


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_listed_command_loads_and_its_summary_opens_its_help(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    help_text = " ".join((command.help or "").split())
    summary = COMMANDS[name].summary
    assert help_text.startswith(summary.rstrip(".")), (summary, help_text)


def test_help_lists_every_command() -> None:
    listing = cli.get_help(click.Context(cli, info_name="wheel"))
    for name, lazy in COMMANDS.items():
        assert f"{name} " in listing
        assert lazy.summary in listing
