"""Run a CLI group against the fake API (the `address` fixture) on a wide terminal."""

from __future__ import annotations

import click
from click.testing import CliRunner, Result

from tests.unit.client.helpers import TOKEN

WIDE = {"COLUMNS": "250", "WHEEL_ENDPOINTS": "", "WHEEL_TOKEN": ""}


def run(group: click.Group, address: str, *args: str, **env: str) -> Result:
    connection = ["--endpoint", address, "--token", TOKEN]
    return CliRunner().invoke(group, [*args, *connection], env={**WIDE, **env})


def ok(result: Result) -> str:
    """Its output, once it succeeded without printing the token."""
    assert result.exit_code == 0, result.output
    assert TOKEN not in result.output
    return result.stdout
