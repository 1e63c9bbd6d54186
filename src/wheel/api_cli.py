"""`wheel jobs ...` and `wheel executions ...`: the public API from the command line."""

from __future__ import annotations

import click


@click.group()
def jobs() -> None:
    """Create, inspect and change jobs."""


@click.group()
def executions() -> None:
    """Inspect, explain, retry and cancel executions."""
