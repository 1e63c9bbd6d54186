"""`wheel dev`'s configuration and its state file, `dev.json` (what a restart reuses)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wheel.errors import ConfigError

VIEWS = ("auto", "table", "lines")


def default_data_dir() -> Path:
    """`.wheel-dev` here; as root /var/lib/wheel-dev, since Postgres's user must reach it."""
    if os.geteuid() == 0:
        return Path("/var/lib/wheel-dev")
    return Path.cwd() / ".wheel-dev"


@dataclass(frozen=True, slots=True)
class DevConfig:
    """Configuration of `wheel dev`."""

    data_dir: Path
    """Where etcd's and Postgres's data, the logs and dev.json live; reused across runs."""
    etcd_port: int = 0
    """etcd client port on 127.0.0.1; 0 picks a free one."""
    postgres_port: int = 0
    """Postgres port on 127.0.0.1; 0 picks a free one."""
    nodes: int = 3
    """Scheduler nodes (dev-0, dev-1, ...)."""
    api_port: int | None = None
    """The first node's gRPC API port, the next nodes' follow; None: 7070.. when free,
    else free ports; 0: free ports."""
    metrics_port: int | None = None
    """The first node's metrics port, the next nodes' then the executor's follow;
    None: 9100.. when free, else free ports; 0: free ports."""
    task_modules: tuple[str, ...] = ()
    """The user's task modules, run by the executor beside the examples."""
    pools: tuple[str, ...] = ()
    """Pools ("slow=4") the executor serves beside `default=16`: those the user's tasks
    declare (an executor refuses to start without a pool one of its tasks declares)."""
    examples: bool = True
    """Create the example jobs (once per data directory)."""
    view: str = "auto"
    """'table' (a live table), 'lines' (a line per change) or 'auto' (table on a terminal)."""
    partitions: int = 16
    """Partition count of a new dev cluster (an existing one keeps its own)."""

    def __post_init__(self) -> None:
        for name in ("etcd_port", "postgres_port", "api_port", "metrics_port"):
            port = getattr(self, name)
            if port is not None and not 0 <= port <= 65535:
                raise ConfigError(name, f"{port} is not a TCP port (0-65535)")
        if not 1 <= self.nodes <= 16:
            raise ConfigError("nodes", f"{self.nodes} is not in 1-16")
        if self.view not in VIEWS:
            raise ConfigError("view", f"{self.view!r} is not one of {', '.join(VIEWS)}")
        if self.partitions < 1:
            raise ConfigError("partitions", f"must be > 0, got {self.partitions}")
        for pool in self.pools:
            name, sep, concurrency = pool.partition("=")
            if not sep or not name.isidentifier() or not concurrency.isdigit():
                raise ConfigError("pools", f"{pool!r} is not NAME=CONCURRENCY (slow=4)")
            if name == "default":
                raise ConfigError("pools", "default is served already (default=16)")
        for module in self.task_modules:
            if not module or not all(part.isidentifier() for part in module.split(".")):
                raise ConfigError("task_modules", f"{module!r} is not a module name")

    @property
    def state_path(self) -> Path:
        return self.data_dir / "dev.json"

    def table_view(self, tty: bool) -> bool:
        return self.view == "table" or (self.view == "auto" and tty)


def previous_token(path: Path, key: str = "token") -> str | None:
    """The token the last run recorded in dev.json under `key` ("token": the tenant's,
    "executor_token": your executors'), if any."""
    try:
        token = json.loads(path.read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return token if isinstance(token, str) else None


def write_state(path: Path, state: dict[str, Any]) -> None:
    """Write dev.json atomically, readable by its owner only (it holds a token)."""
    scratch = path.with_name(path.name + ".tmp")
    descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        os.fchmod(file.fileno(), 0o600)  # O_CREAT's mode applies only to a new file
        file.write(json.dumps(state, indent=2) + "\n")
    os.replace(scratch, path)
