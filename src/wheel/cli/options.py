"""Options several `wheel` commands share, defined once so flags and variables agree."""

from __future__ import annotations

import click

dsn = click.option(
    "--dsn",
    envvar="WHEEL_POSTGRES_DSN",
    required=True,
    help="Postgres connection URI (env WHEEL_POSTGRES_DSN; keep passwords out of shell history).",
)

etcd = click.option(
    "--etcd",
    "endpoint",
    envvar="WHEEL_ETCD_ENDPOINT",
    required=True,
    help="etcd client URL, e.g. http://127.0.0.1:2379 (env WHEEL_ETCD_ENDPOINT).",
)

output = click.option(
    "--output", type=click.Choice(["table", "json"]), default="table", show_default=True
)

cluster = click.option(
    "--cluster",
    envvar="WHEEL_CLUSTER",
    default="default",
    show_default=True,
    help="Cluster name: keys live under /wheel/<cluster>/ (env WHEEL_CLUSTER).",
)
