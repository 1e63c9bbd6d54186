"""`wheel dev`: the command; the cluster it runs is `wheel.devcluster`."""

from __future__ import annotations

from pathlib import Path

import click

from wheel import devcluster, eventloop
from wheel.store.migrate import migrate as migrate_schema


@click.command()
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
