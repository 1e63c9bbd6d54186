"""`wheel scheduler`: flags and `WHEEL_*` environment variables into a `SchedulerConfig`."""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Callable
from typing import Any

import click

from wheel import eventloop, tracing
from wheel.cli import configfile
from wheel.scheduler.config import SchedulerConfig

_HELP = {
    "node_id": "This node's id (default: the host name; a StatefulSet pod's name).",
    "postgres_dsn": "Postgres connection string.",
    "etcd_endpoint": "etcd endpoint, host:port.",
    "prefetch_ms": "Claim and hand over runs that overlap nothing this long before their "
    "instant (-1: 5000, or half of --lease-s when that is less).",
}
_TYPES: dict[object, type] = {"str": str, "int": int, "float": float, "bool": bool}
_ENVIRONMENT_ONLY = {"etcd_password": "WHEEL_ETCD_PASSWORD"}
"""Secrets: never a flag (shell history, `ps`), only the environment or a file."""


def config_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """One option per `SchedulerConfig` field: `--window-s` / `WHEEL_WINDOW_S`."""
    defaults = {f.name: f.default for f in dataclasses.fields(SchedulerConfig)}
    for field in reversed(dataclasses.fields(SchedulerConfig)):
        if field.name in _ENVIRONMENT_ONLY:
            continue
        kind = _TYPES[str(field.type)]
        default = defaults[field.name]
        has_default = default is not dataclasses.MISSING
        flag = f"--{field.name.replace('_', '-')}"
        if kind is bool:  # a switch: --tracing / --no-tracing
            flag = f"{flag}/--no-{flag[2:]}"
        command = click.option(
            flag,
            field.name,
            type=None if kind is bool else kind,
            envvar=f"WHEEL_{field.name.upper()}",
            default=default if has_default else None,
            show_default=has_default and field.name != "postgres_dsn",
            required=not has_default and field.name != "node_id",
            help=_HELP.get(field.name, ""),
        )(command)
    return command


@click.command()
@configfile.option()
@config_options
def scheduler(**options: Any) -> None:
    """Run a scheduler node until SIGTERM or Ctrl-C (then hand its partitions over)."""
    from wheel.scheduler.node import SchedulerNode
    from wheel.signals import wait_for_stop_signal

    options["node_id"] = options["node_id"] or f"{socket.gethostname()}-{os.getpid()}"
    for name, variable in _ENVIRONMENT_ONLY.items():
        options[name] = os.environ.get(variable, "")
    config = SchedulerConfig(**options)
    if config.tracing:
        tracing.enable("wheel-scheduler")
    node = SchedulerNode(config)
    eventloop.run(node.run(wait_for_stop_signal()))
