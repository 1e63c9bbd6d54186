"""`wheel dev`: the command; the cluster it runs is `wheel.dev.cluster`, imported when the
command runs (it brings the store, gRPC and aiohttp: `wheel dev --help` needs none)."""

from __future__ import annotations

from pathlib import Path

import click

from wheel import eventloop
from wheel.dev import config as devconfig


@click.command()
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="WHEEL_DEV_DATA_DIR",
    default=None,
    help="Data directory, reused across runs (env WHEEL_DEV_DATA_DIR). "
    "Default: ./.wheel-dev; as root /var/lib/wheel-dev.",
)
@click.option("--etcd-port", type=int, default=0, help="0 (default) picks a free port.")
@click.option("--postgres-port", type=int, default=0, help="0 (default) picks a free port.")
@click.option(
    "--nodes", type=int, default=3, show_default=True, help="Scheduler nodes (dev-0, dev-1, ...)."
)
@click.option(
    "--api-port",
    type=int,
    envvar="WHEEL_DEV_API_PORT",
    default=None,
    help="The first node's gRPC API port; the others follow (env WHEEL_DEV_API_PORT). "
    "Default: 7070.. when free, else free ports; 0: free ports.",
)
@click.option(
    "--metrics-port",
    type=int,
    envvar="WHEEL_DEV_METRICS_PORT",
    default=None,
    help="The first node's metrics port; the other nodes' and the executor's follow "
    "(env WHEEL_DEV_METRICS_PORT). Default: 9100.. when free, else free ports; 0: free ports.",
)
@click.option(
    "--tasks",
    "task_modules",
    multiple=True,
    metavar="MODULE",
    help="Your module of @wheel.task handlers, run beside the examples; repeatable.",
)
@click.option(
    "--pool",
    "pools",
    multiple=True,
    metavar="NAME=N",
    help="A pool the executor serves beside default=16, for tasks that declare it "
    '(@wheel.task(..., pool="slow") needs --pool slow=4); repeatable.',
)
@click.option(
    "--examples/--no-examples",
    default=True,
    show_default=True,
    help="Create the example jobs (once per data directory).",
)
@click.option(
    "--view",
    type=click.Choice(devconfig.VIEWS),
    default="auto",
    show_default=True,
    help="How executions are shown: a live table, a line per change, or the table on a terminal.",
)
def dev(
    data_dir: Path | None,
    etcd_port: int,
    postgres_port: int,
    nodes: int,
    api_port: int | None,
    metrics_port: int | None,
    task_modules: tuple[str, ...],
    pools: tuple[str, ...],
    examples: bool,
    view: str,
) -> None:
    """Run a local cluster in the foreground; Ctrl-C stops it."""
    from wheel.dev import cluster as devcluster

    config = devconfig.DevConfig(
        data_dir=(data_dir or devconfig.default_data_dir()).resolve(),
        etcd_port=etcd_port,
        postgres_port=postgres_port,
        nodes=nodes,
        api_port=api_port,
        metrics_port=metrics_port,
        task_modules=task_modules,
        pools=pools,
        examples=examples,
        view=view,
    )
    click.echo(f"wheel dev: starting in {config.data_dir}")
    eventloop.run(devcluster.run(config))
    click.echo("wheel dev: stopped")
