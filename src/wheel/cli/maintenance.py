"""`wheel migrate` and `wheel shards`: the database schema and etcd's partition table,
read or brought up to date without a scheduler node."""

from __future__ import annotations

import dataclasses
import json

import click

from wheel import eventloop
from wheel.cli import options


@click.command()
@options.dsn
def migrate(dsn: str) -> None:
    """Bring the database schema up to date (safe to run from several processes at once)."""
    from wheel.store import migrate as run_migrations

    applied = eventloop.run(run_migrations(dsn))
    for migration in applied:
        click.echo(f"applied {migration.number:04d}_{migration.name}")
    click.echo("schema up to date" if applied else "schema already up to date")


@click.command()
@options.etcd
@options.etcd_access
@options.cluster
@options.output
def shards(endpoint: str, etcd_access: options.EtcdAccess, cluster: str, output: str) -> None:
    """Every partition, the node that owns it and its epoch (as etcdctl would show them)."""
    from wheel.cli.session import CommandError
    from wheel.coordinator import shards as listing
    from wheel.coordinator.etcd import Etcd
    from wheel.coordinator.layout import Layout

    settings = etcd_access.settings(endpoint)

    async def read() -> tuple[bool, list[listing.Shard]]:
        etcd = await Etcd.connect(settings)
        try:
            layout = Layout(cluster)
            rows = await listing.shards(etcd, layout)
            # Asked only when nothing is held: is there a cluster of that name at all?
            made = any(row.node_id for row in rows) or (
                await etcd.get(layout.config) is not None
                or bool((await etcd.get_prefix(layout.nodes))[0])
            )
            return made, rows
        finally:
            await etcd.close()

    made, rows = eventloop.run(read())
    if not made:
        # No node ever ran in it: most often a --cluster other than the nodes' own.
        raise CommandError(
            f"no node is in cluster {cluster!r} (nothing under /wheel/{cluster}/ in etcd): "
            "check --cluster (env WHEEL_CLUSTER) against the nodes' own"
        )
    if output == "json":
        click.echo(json.dumps([dataclasses.asdict(row) for row in rows], indent=2))
        return
    if output == "jsonl":
        for row in rows:
            click.echo(json.dumps(dataclasses.asdict(row)))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("partition", "owner", "epoch", "since", title=f"cluster {cluster}")
    for row in rows:
        table.add_row(f"{row.partition:04d}", row.node_id or "-", str(row.epoch or "-"),
                      row.since or "-")  # fmt: skip
    held = sum(row.node_id is not None for row in rows)
    Console().print(table)
    click.echo(f"{held} of {len(rows)} partitions held")
