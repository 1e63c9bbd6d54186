"""The `wheel` command: parse, build configuration, run — nothing else."""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from wheel import cli_options, devcluster, eventloop, logs
from wheel.admin_cli import tenants, tokens
from wheel.errors import WheelError
from wheel.executor.cli import executor
from wheel.scheduler.cli import scheduler
from wheel.store.migrate import migrate as migrate_schema

CONTEXT = {"auto_envvar_prefix": "WHEEL", "help_option_names": ["-h", "--help"]}


@click.group(context_settings=CONTEXT)
@click.version_option(package_name="wheel-scheduler", prog_name="wheel")
def cli() -> None:
    """wheel: a distributed job scheduler."""
    logs.configure(logging.INFO)


@cli.command()
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Data directory (env WHEEL_DEV_DATA_DIR). "
    "Default: ./.wheel-dev; as root /var/lib/wheel-dev.",
)
@click.option("--etcd-port", type=int, default=0, help="0 (default) picks a free port.")
@click.option("--postgres-port", type=int, default=0, help="0 (default) picks a free port.")
def dev(data_dir: Path | None, etcd_port: int, postgres_port: int) -> None:
    """Run a local cluster in the foreground; Ctrl-C stops it."""
    from wheel.local import LocalServices

    config = devcluster.DevConfig(
        data_dir=(data_dir or devcluster.default_data_dir()).resolve(),
        etcd_port=etcd_port,
        postgres_port=postgres_port,
    )
    click.echo(f"wheel dev: starting in {config.data_dir}")
    with LocalServices.start(
        config.data_dir, etcd_port=config.etcd_port, postgres_port=config.postgres_port
    ) as services:
        devcluster.ensure_database(services.postgres.dsn(), devcluster.DATABASE)
        dsn = services.postgres.dsn(devcluster.DATABASE)
        for migration in eventloop.run(migrate_schema(dsn)):
            click.echo(f"applied migration {migration.number:04d}_{migration.name}")
        devcluster.write_state(services, dsn)
        click.echo(devcluster.describe(services, dsn))
        click.echo("wheel dev: ready", err=False)
        received = eventloop.run(devcluster.wait_for_stop_signal())
        click.echo(f"wheel dev: {received.name} received, stopping")
    click.echo("wheel dev: stopped")


@cli.command()
@cli_options.dsn
def migrate(dsn: str) -> None:
    """Bring the database schema up to date (safe to run from several processes at once)."""
    from wheel.store import migrate as run_migrations

    applied = eventloop.run(run_migrations(dsn))
    for migration in applied:
        click.echo(f"applied {migration.number:04d}_{migration.name}")
    click.echo("schema up to date" if applied else "schema already up to date")


@cli.command()
@cli_options.etcd
@click.option(
    "--cluster",
    envvar="WHEEL_CLUSTER",
    default="default",
    show_default=True,
    help="Cluster name: keys live under /wheel/<cluster>/ (env WHEEL_CLUSTER).",
)
@cli_options.output
def shards(endpoint: str, cluster: str, output: str) -> None:
    """Every partition, the node that owns it and its epoch (as etcdctl would show them)."""
    from wheel.coordinator import shards as listing
    from wheel.coordinator.etcd import Etcd
    from wheel.coordinator.layout import Layout

    async def read() -> list[listing.Shard]:
        etcd = await Etcd.connect(endpoint)
        try:
            return await listing.shards(etcd, Layout(cluster))
        finally:
            await etcd.close()

    rows = eventloop.run(read())
    if output == "json":
        click.echo(json.dumps([dataclasses.asdict(row) for row in rows], indent=2))
        return
    table = Table("partition", "owner", "epoch", "since", title=f"cluster {cluster}")
    for row in rows:
        table.add_row(f"{row.partition:04d}", row.node_id or "-", str(row.epoch or "-"),
                      row.since or "-")  # fmt: skip
    held = sum(row.node_id is not None for row in rows)
    Console().print(table)
    click.echo(f"{held} of {len(rows)} partitions held")


cli.add_command(scheduler)
cli.add_command(tenants)
cli.add_command(tokens)
cli.add_command(executor)


def main() -> None:
    """Entry point: run the CLI, turning wheel's errors into a message and exit code 1."""
    try:
        cli.main(prog_name="wheel", standalone_mode=True)
    except WheelError as exc:
        click.echo(f"wheel: error: {exc}", err=True)
        sys.exit(1)
