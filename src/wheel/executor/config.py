"""Configuration of an executor process: `ExecutorConfig("ex-1", pools={"default": 64})`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from wheel.coordinator.etcd_settings import EtcdSettings
from wheel.errors import ConfigError

DEFAULT_HOLD = 50_000
"""Runs a stream may hold beyond its concurrency: a spike of 50,000 due at once is
claimed and handed over before its instant (each held run costs about 1 KB)."""

_KEY_PART = re.compile(r"^[A-Za-z0-9._:-]+$")


def _default_pools() -> Mapping[str, int]:
    return {"default": 64}


@dataclass(frozen=True, slots=True)
class ExecutorConfig:
    executor_id: str
    """This executor's name in the cluster (`/wheel/<cluster>/executors/<id>`)."""
    cluster: str = "default"
    """Keys live under /wheel/<cluster>/."""
    nodes: tuple[str, ...] = ()
    """Scheduler nodes to ask where every node is (host:port; one is enough, e.g. a
    headless Service). Given, the executor needs no etcd at all; empty: it reads etcd."""
    nodes_from: str = "--node"
    """Where `nodes` came from ("--node", "WHEEL_NODES"), for the logs that name them."""
    etcd_endpoint: str = "http://127.0.0.1:2379"
    """etcd members, comma-separated: host:port, http://host:port or https://host:port."""
    etcd_ca_file: str = ""
    """PEM of the CA that signed etcd's certificates; set, etcd is reached over TLS."""
    etcd_cert_file: str = ""
    """PEM client certificate for an etcd that asks for one."""
    etcd_key_file: str = ""
    """PEM key of etcd_cert_file."""
    etcd_user: str = ""
    """etcd user, for an etcd with authentication enabled."""
    etcd_password: str = field(default="", repr=False)
    """etcd_user's password (from WHEEL_ETCD_PASSWORD or --etcd-password-file, never a flag)."""
    task_modules: tuple[str, ...] = ()
    """Modules imported at start; their `@wheel.task` decorators register the handlers."""
    pools: Mapping[str, int] = field(default_factory=_default_pools)
    """Executions run at once per pool."""
    hold: int = DEFAULT_HOLD
    """Runs each stream may hand over per pool beyond its concurrency: nodes claim runs up
    to their `prefetch_ms` ahead and the executor holds them (memory, no slot) until their
    instant, so a spike's database work is done before it. 0: only what can run now."""
    backlog_s: float = 5.0
    """Once a pool has been saturated, it takes only what it can start within this long at
    the start rate it measured then (beyond its concurrency): nodes claim no further ahead
    than the executors can keep up with."""
    max_ready_wait_s: float = 10.0
    """A run due this long that is still waiting for a slot is handed back (NOT_STARTED):
    a node gives it to whoever has room, and no lease ever has to cover a queue."""
    drain_timeout_s: float = 30.0
    """On shutdown, how long running handlers may go on before they are cancelled."""
    flush_timeout_s: float = 10.0
    """On shutdown, how long to wait for the scheduler to acknowledge buffered results."""
    reconnect_min_s: float = 0.1
    """First delay before reconnecting a broken stream; doubles (with jitter) to the max."""
    reconnect_max_s: float = 5.0
    """Longest delay between reconnect attempts while a node is listed."""
    thread_pool_size: int | None = None
    """Worker threads for sync handlers; None: the total concurrency of all pools."""
    session_ttl_s: int = 10
    """TTL of the lease the executor's registration lives under."""
    reach_check_s: float = 10.0
    """How often it checks that it reaches a node; while it reaches none it logs an error
    naming the likely cause (a wrong --cluster, a refused token), every check."""
    metrics_listen: str = ""
    """host:port for Prometheus metrics (/metrics); empty: not served."""
    tracing: bool = False
    """Send an OpenTelemetry span per handler run (the `otel` extra; OTEL_* variables)."""
    token: str = field(default="", repr=False)
    """The executor token (`wheel tokens create --executor`) the nodes require on the stream."""
    tls: bool = False
    """Connect to the nodes over TLS (they serve TLS when given a certificate)."""
    tls_ca_file: str = ""
    """PEM CA bundle the nodes' certificates are checked against; empty: the system's."""

    def etcd(self) -> EtcdSettings:
        return EtcdSettings.of_config(self)

    def __post_init__(self) -> None:
        for name in ("executor_id", "cluster"):
            value = getattr(self, name)
            if not _KEY_PART.match(value):
                raise ConfigError(
                    name, f"{value!r} must be non-empty letters, digits, '.', '_', ':' or '-'"
                )
        for address in self.nodes:
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit() or "/" in address:
                raise ConfigError("nodes", f"{address!r} is not host:port")
        if not self.nodes:
            self.etcd().check()
        for module in self.task_modules:
            if not module or not all(part.isidentifier() for part in module.split(".")):
                raise ConfigError("task_modules", f"{module!r} is not a module name")
        if not self.pools:
            raise ConfigError("pools", "at least one pool is needed")
        for pool, concurrency in self.pools.items():
            if not _KEY_PART.match(pool):
                raise ConfigError("pools", f"pool name {pool!r} is not a plain name")
            if isinstance(concurrency, bool) or not isinstance(concurrency, int):
                raise ConfigError("pools", f"pool {pool!r}: concurrency must be an integer")
            if not 1 <= concurrency <= 100_000:
                raise ConfigError(
                    "pools", f"pool {pool!r}: concurrency {concurrency} not in 1..100000"
                )
        object.__setattr__(self, "pools", MappingProxyType(dict(self.pools)))
        if self.tls_ca_file and not self.tls:
            raise ConfigError("tls_ca_file", "given without tls")
        if self.tls_ca_file and not Path(self.tls_ca_file).is_file():
            raise ConfigError("tls_ca_file", f"{self.tls_ca_file} is not a readable file")
        if self.drain_timeout_s < 0:
            raise ConfigError("drain_timeout_s", f"{self.drain_timeout_s} is negative")
        if self.flush_timeout_s < 0:
            raise ConfigError("flush_timeout_s", f"{self.flush_timeout_s} is negative")
        if self.reconnect_min_s <= 0:
            raise ConfigError("reconnect_min_s", f"{self.reconnect_min_s} must be positive")
        if self.reconnect_max_s < self.reconnect_min_s:
            raise ConfigError(
                "reconnect_max_s",
                f"{self.reconnect_max_s} is below reconnect_min_s {self.reconnect_min_s}",
            )
        if self.thread_pool_size is not None and self.thread_pool_size < 1:
            raise ConfigError("thread_pool_size", f"{self.thread_pool_size} must be at least 1")
        if self.backlog_s <= 0:
            raise ConfigError("backlog_s", f"{self.backlog_s} must be positive")
        if self.max_ready_wait_s <= 0:
            raise ConfigError("max_ready_wait_s", f"{self.max_ready_wait_s} must be positive")
        if not 0 <= self.hold <= 1_000_000:
            raise ConfigError("hold", f"{self.hold} not in 0..1000000")
        if self.reach_check_s <= 0:
            raise ConfigError("reach_check_s", f"{self.reach_check_s} must be positive")
        if self.session_ttl_s < 1:
            raise ConfigError("session_ttl_s", f"{self.session_ttl_s} must be at least 1")

    @property
    def capacity(self) -> int:
        """Executions this executor runs at once, over all pools."""
        return sum(self.pools.values())

    @property
    def threads(self) -> int:
        return self.thread_pool_size or self.capacity
