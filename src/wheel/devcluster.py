"""`wheel dev`: a whole local cluster in one command, stopped by Ctrl-C.

Today it starts etcd and Postgres (creating the `wheel` database); scheduler
nodes and an executor join it as they land. It writes `dev.json` into the data
directory — endpoints and process ids — for tools and tests to find it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from wheel.errors import ConfigError
from wheel.local import LocalServices
from wheel.local.etcd import etcd_binary

DATABASE = "wheel"


def default_data_dir() -> Path:
    """`.wheel-dev` here; as root /var/lib/wheel-dev, since Postgres's user must reach it."""
    if os.geteuid() == 0:
        return Path("/var/lib/wheel-dev")
    return Path.cwd() / ".wheel-dev"


@dataclass(frozen=True, slots=True)
class DevConfig:
    """Configuration of `wheel dev`."""

    data_dir: Path
    """Where etcd's and Postgres's data and logs live; reused across runs."""
    etcd_port: int = 0
    """etcd client port on 127.0.0.1; 0 picks a free one."""
    postgres_port: int = 0
    """Postgres port on 127.0.0.1; 0 picks a free one."""

    def __post_init__(self) -> None:
        for field in ("etcd_port", "postgres_port"):
            port = getattr(self, field)
            if not 0 <= port <= 65535:
                raise ConfigError(field, f"{port} is not a TCP port (0-65535)")


def ensure_database(admin_dsn: str, name: str) -> None:
    """Create database `name` unless it exists."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def describe(services: LocalServices, dsn: str) -> str:
    """The banner: where everything is and how to look inside."""
    etcd, postgres = services.etcd, services.postgres
    return "\n".join(
        [
            f"etcd      {etcd.endpoint}  (ready in {services.etcd_start_s:.2f} s)",
            f"postgres  {dsn}  (ready in {services.postgres_start_s:.2f} s)",
            "",
            "inspect:",
            f"  {etcd_binary('etcdctl')} --endpoints {etcd.endpoint} get --prefix /wheel/",
            f"  {postgres.psql} '{dsn}'",
            "",
            "Ctrl-C stops everything.",
        ]
    )


def write_state(services: LocalServices, dsn: str) -> Path:
    """Record endpoints and pids in `dev.json` in the data directory."""
    path = services.etcd.data_dir.parent / "dev.json"
    state = {
        "etcd": {"endpoint": services.etcd.endpoint, "pid": services.etcd.process.pid},
        "postgres": {"dsn": dsn, "pid": services.postgres.process.pid},
        "pid": os.getpid(),
    }
    path.write_text(json.dumps(state, indent=2) + "\n")
    return path


async def wait_for_stop_signal() -> signal.Signals:
    """Return the first SIGINT or SIGTERM received."""
    loop = asyncio.get_running_loop()
    received: asyncio.Future[signal.Signals] = loop.create_future()

    def on_signal(sig: signal.Signals) -> None:
        if not received.done():
            received.set_result(sig)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        return await received
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
