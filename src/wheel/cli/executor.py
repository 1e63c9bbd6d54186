"""`wheel executor`: parse, build the configuration, run — nothing else.

The main CLI adds it with `cli.add_command(executor)`; it also runs alone.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from pathlib import Path

import click

from wheel import eventloop, tracing
from wheel.cli import configfile, logs, options
from wheel.errors import WheelError

HOLD_SHOWN = "50000"
"""--hold's default as `--help` shows it: `wheel.executor.config.DEFAULT_HOLD`, which is
read when the command runs (its module brings gRPC; `wheel executor --help` needs none)."""


def _default_executor_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def _default_hold() -> int:
    from wheel.executor.config import DEFAULT_HOLD

    return DEFAULT_HOLD


def _nodes_from() -> str:
    """Where --node's values came from, for the logs that name them."""
    source = click.get_current_context().get_parameter_source("nodes")
    return "WHEEL_NODES" if source is click.core.ParameterSource.ENVIRONMENT else "--node"


def _pools(values: tuple[str, ...]) -> dict[str, int]:
    pools: dict[str, int] = {}
    for value in values:
        name, sep, concurrency = value.partition("=")
        if not sep or not name or not concurrency.strip().isdigit():
            raise click.BadParameter(f"{value!r} is not NAME=CONCURRENCY", param_hint="--pool")
        if name in pools:
            raise click.BadParameter(f"pool {name!r} is given twice", param_hint="--pool")
        pools[name] = int(concurrency)
    return pools or {"default": 64}


@click.command()
@configfile.option()
@click.option(
    "--executor-id",
    envvar="WHEEL_EXECUTOR_ID",
    default=_default_executor_id,
    show_default="hostname-pid",
    help="This executor's name in the cluster (env WHEEL_EXECUTOR_ID).",
)
@options.cluster
@click.option(
    "--node",
    "nodes",
    multiple=True,
    envvar="WHEEL_NODES",
    metavar="HOST:PORT",
    help="A scheduler node to learn the cluster from (repeatable; env WHEEL_NODES, spaced or "
    "comma-separated). One is enough, e.g. a headless Service; with it no etcd is needed.",
)
@click.option(
    "--etcd",
    "endpoint",
    envvar="WHEEL_ETCD_ENDPOINT",
    default="",
    help="Find the nodes in etcd instead (env WHEEL_ETCD_ENDPOINT), when no --node is given.",
)
@click.option(
    "--tasks",
    "modules",
    multiple=True,
    envvar="WHEEL_TASKS",
    metavar="MODULE",
    help="A module defining tasks with @wheel.task; repeat for more (env WHEEL_TASKS, spaced).",
)
@click.option(
    "--pool",
    "pools",
    multiple=True,
    envvar="WHEEL_POOLS",
    metavar="NAME=CONCURRENCY",
    help="A pool served and how many of its executions run at once; repeatable "
    "(env WHEEL_POOLS, spaced: 'default=64 slow=4'). Default: default=64.",
)
@click.option(
    "--hold",
    type=click.IntRange(0, 1_000_000),
    envvar="WHEEL_HOLD",
    default=_default_hold,
    show_default=HOLD_SHOWN,
    help="Runs each node may hand over per pool beyond its concurrency, held until their "
    "instant: a spike's claims happen before it (env WHEEL_HOLD).",
)
@click.option(
    "--backlog",
    "backlog_s",
    type=click.FloatRange(min=0, min_open=True),
    envvar="WHEEL_BACKLOG",
    default=5.0,
    show_default=True,
    help="Seconds of work a saturated pool takes on beyond its concurrency, at the start "
    "rate it measured: nodes claim no further ahead than that (env WHEEL_BACKLOG).",
)
@click.option(
    "--max-ready-wait",
    "max_ready_wait_s",
    type=click.FloatRange(min=0, min_open=True),
    envvar="WHEEL_MAX_READY_WAIT",
    default=10.0,
    show_default=True,
    help="Seconds a due run may wait for a slot before it is handed back for another "
    "executor (env WHEEL_MAX_READY_WAIT).",
)
@click.option(
    "--drain-timeout",
    type=click.FloatRange(min=0),
    envvar="WHEEL_DRAIN_TIMEOUT",
    default=30.0,
    show_default=True,
    help="Seconds running handlers may go on after SIGTERM before they are cancelled "
    "(env WHEEL_DRAIN_TIMEOUT).",
)
@click.option(
    "--metrics-listen",
    envvar="WHEEL_METRICS_LISTEN",
    default="",
    help="host:port to serve Prometheus metrics on (env WHEEL_METRICS_LISTEN); empty: off.",
)
@click.option(
    "--tracing/--no-tracing",
    "tracing_on",
    envvar="WHEEL_TRACING",
    default=False,
    help="Send an OpenTelemetry span per handler run, continuing the node's trace (env "
    "WHEEL_TRACING; needs the otel extra; OTEL_* variables configure the exporter).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="WHEEL_EXECUTOR_TOKEN_FILE",
    help="File holding the executor token (env WHEEL_EXECUTOR_TOKEN_FILE); or set "
    "WHEEL_EXECUTOR_TOKEN. Make one with `wheel tokens create --executor`.",
)
@options.etcd_access
@click.option(
    "--tls/--no-tls",
    envvar="WHEEL_TLS",
    default=False,
    help="Connect to the nodes over TLS (env WHEEL_TLS).",
)
@click.option(
    "--tls-ca-file",
    envvar="WHEEL_TLS_CA_FILE",
    default="",
    help="PEM CA bundle for the nodes' certificates (env WHEEL_TLS_CA_FILE); default: system's.",
)
def executor(
    executor_id: str,
    cluster: str,
    nodes: tuple[str, ...],
    endpoint: str,
    modules: tuple[str, ...],
    pools: tuple[str, ...],
    hold: int,
    backlog_s: float,
    max_ready_wait_s: float,
    drain_timeout: float,
    metrics_listen: str,
    tracing_on: bool,
    token_file: Path | None,
    tls: bool,
    tls_ca_file: str,
    etcd_access: options.EtcdAccess,
) -> None:
    """Run task handlers for the scheduler nodes; SIGTERM drains and exits."""
    from wheel.executor.config import ExecutorConfig
    from wheel.executor.executor import run_executor

    logs.configure(logging.INFO)  # the main group did too; alone, this command does it
    if os.getcwd() not in sys.path:
        sys.path.insert(
            0, os.getcwd()
        )  # --tasks names modules of the project run from, as uvicorn does
    seeds = tuple(a for value in nodes for a in value.replace(",", " ").split())
    if not seeds and not endpoint:
        raise click.UsageError("give --node HOST:PORT (a scheduler node), or --etcd URL")
    try:
        config = ExecutorConfig(
            executor_id=executor_id,
            cluster=cluster,
            nodes=seeds,
            nodes_from=_nodes_from(),
            etcd_endpoint=endpoint or "http://127.0.0.1:2379",
            task_modules=modules,
            pools=_pools(pools),
            hold=hold,
            backlog_s=backlog_s,
            max_ready_wait_s=max_ready_wait_s,
            drain_timeout_s=drain_timeout,
            metrics_listen=metrics_listen,
            tracing=tracing_on,
            token=options.secret(token_file, "WHEEL_EXECUTOR_TOKEN", "--token-file"),
            tls=tls,
            tls_ca_file=tls_ca_file,
            etcd_ca_file=etcd_access.etcd_ca_file,
            etcd_cert_file=etcd_access.etcd_cert_file,
            etcd_key_file=etcd_access.etcd_key_file,
            etcd_user=etcd_access.etcd_user,
            etcd_password=etcd_access.etcd_password,
        )
        if config.tracing:
            tracing.enable("wheel-executor")
        eventloop.run(run_executor(config))
    except WheelError as exc:
        raise click.ClickException(str(exc)) from exc
