"""The `wheel` command: parse, build configuration, run — nothing else.

Each command's module is imported only when that command runs (`wheel.cli.lazy`):
`wheel --help` imports no gRPC, psycopg or dev cluster, and `wheel jobs list`
no psycopg.
"""

from __future__ import annotations

import logging
import sys

import click

from wheel import __version__
from wheel.cli import logs
from wheel.cli.lazy import Lazy, LazyGroup
from wheel.errors import WheelError

CONTEXT = {"auto_envvar_prefix": "WHEEL", "help_option_names": ["-h", "--help"]}

COMMANDS = {
    "calendars": Lazy("wheel.cli.calendars:calendars", "Business calendars: the days jobs skip."),
    "completion": Lazy("wheel.cli.completion:completion", "Print the shell completion script."),
    "dev": Lazy("wheel.cli.dev:dev", "Run a local cluster in the foreground; Ctrl-C stops it."),
    "executions": Lazy(
        "wheel.cli.jobs:executions", "Inspect, explain, retry and cancel executions."
    ),
    "executor": Lazy("wheel.cli.executor:executor", "Run task handlers for the scheduler nodes."),
    "executors": Lazy("wheel.cli.cluster:executors", "Every executor: its pools and task types."),
    "jobs": Lazy("wheel.cli.jobs:jobs", "Create, inspect and change jobs."),
    "migrate": Lazy("wheel.cli.maintenance:migrate", "Bring the database schema up to date."),
    "nodes": Lazy("wheel.cli.cluster:nodes", "Every scheduler node: where it listens."),
    "notifications": Lazy("wheel.cli.notifications:notifications", "The tenant's webhook."),
    "scheduler": Lazy("wheel.cli.scheduler:scheduler", "Run a scheduler node."),
    "shards": Lazy("wheel.cli.maintenance:shards", "Every partition, the node that owns it."),
    "tenants": Lazy("wheel.cli.admin:tenants", "Create tenants."),
    "tokens": Lazy("wheel.cli.admin:tokens", "Create and revoke API tokens."),
}


@click.group(cls=LazyGroup, commands=COMMANDS, context_settings=CONTEXT)
# The version from the package, not importlib.metadata: that scans every installed
# distribution, which was most of `wheel --version`'s time.
@click.version_option(version=__version__, prog_name="wheel")
def cli() -> None:
    """wheel: a distributed job scheduler."""
    logs.configure(logging.INFO)


def main() -> None:
    """Entry point: run the CLI, turning wheel's errors into a message and exit code 1."""
    try:
        cli.main(prog_name="wheel", standalone_mode=True)
    except WheelError as exc:
        click.echo(f"wheel: error: {exc}", err=True)
        sys.exit(1)
