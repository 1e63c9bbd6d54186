"""A scheduler node's configuration: one typed object, validated once."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import yarl

from wheel.coordinator.etcd_settings import EtcdSettings
from wheel.errors import ConfigError
from wheel.model.notifications import DEFAULT_DENIED

_DEFAULT_PREFETCH_MS = 5000
_DEFAULT_PREFETCH_MAX_MS = 30_000


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Everything a `wheel scheduler` process needs; times in seconds unless named.

    The defaults are the design's: a 5-minute loaded window, a 1-hour
    materialisation horizon, 256 partitions for a new cluster.
    """

    node_id: str
    """This node's name in the cluster: unique, no '/' (its etcd keys are named by it)."""
    postgres_dsn: str = field(repr=False)
    """libpq connection string of the database (kept out of repr: it may carry a password)."""
    etcd_endpoint: str
    """etcd members, comma-separated: host:port, http://host:port or https://host:port (TLS)."""
    etcd_ca_file: str = ""
    """PEM of the CA that signed etcd's certificates; set, etcd is reached over TLS."""
    etcd_cert_file: str = ""
    """PEM client certificate for an etcd that asks for one (--client-cert-auth)."""
    etcd_key_file: str = ""
    """PEM key of etcd_cert_file."""
    etcd_user: str = ""
    """etcd user, for an etcd with authentication enabled."""
    etcd_password_file: str = ""
    """A file holding etcd_user's password (a mounted Secret); or set WHEEL_ETCD_PASSWORD."""
    etcd_password: str = field(default="", repr=False)
    """etcd_user's password: from WHEEL_ETCD_PASSWORD only (never a flag), or the file."""
    cluster: str = "default"
    """Cluster name: its keys live under /wheel/<cluster>/ in etcd."""
    listen: str = "127.0.0.1:0"
    """host:port of the gRPC server; port 0 picks a free one."""
    advertise: str = ""
    """host:port executors reach this node at (default: the bound listen address)."""
    http_listen: str = ""
    """host:port of the web dashboard (port 0 picks one); empty: not served. It calls this
    node's own API with each signed-in user's token."""
    http_public_url: str = ""
    """The dashboard's address as browsers reach it, e.g. https://wheel.example.com behind
    an Ingress that ends TLS and forwards plain HTTP to the node: https here makes the
    session cookie Secure (no forwarded header is trusted for that). Empty: the node's
    own plain HTTP, and a cookie that is not Secure."""
    cors_origins: str = ""
    """Other sites whose pages may call the JSON API on http_listen from a browser, comma
    separated origins (https://console.example.com, scheme://host[:port]); empty: none (the
    API takes bearer tokens, not cookies, so it needs no CORS to be safe from other sites)."""
    metrics_listen: str = ""
    """host:port for Prometheus metrics (/metrics); empty: not served."""
    tls_cert_file: str = ""
    """PEM certificate chain: with tls_key_file, the gRPC server speaks only TLS."""
    tls_key_file: str = ""
    """PEM private key of tls_cert_file (a file, so the key never sits in flags or env)."""
    token_cache_s: float = 5.0
    """How long a token's tenant is cached: a revoked token stops working within this."""
    partitions: int = 256
    """Partition count for a new cluster; an existing cluster keeps its own."""
    session_ttl_s: int = 10
    """TTL of the node's etcd session: a node that stops renewing it loses its partitions
    this long after."""
    window_s: float = 300.0
    """Pending occurrences due within this long are kept in the timing wheel."""
    load_interval_s: float = 1.0
    """How often the loaded window is topped up to `window_s` ahead."""
    catch_up_interval_s: float = 5.0
    """The safety net: overdue pending occurrences not in the wheel are picked up this often."""
    materialise_interval_s: float = 5.0
    """How often recurring jobs of owned partitions get occurrences up to the horizon."""
    horizon_s: float = 3600.0
    """Recurring jobs' occurrences are written to Postgres this far ahead."""
    lead_ms: int = 250
    """Runs of jobs whose overlap policy is not 'allow' are claimed and dispatched this long
    before their instant (the overlap check sees the previous run as late as it can); the
    executor starts each at its instant."""
    prefetch_ms: int = -1
    """Runs that can overlap nothing (one-offs, overlap 'allow') are claimed and handed to
    executors this long before their instant, so a spike's claims are done before it; the
    executor holds each (see the executor's `hold`) and starts it at its instant. At most
    half of `lease_s`; unset (-1): 5,000, or half of `lease_s` when that is less."""
    prefetch_max_ms: int = -1
    """The most a run that overlaps nothing is claimed ahead: a crowded instant is claimed
    early enough to be with executors by its instant at the measured hand-over rate (see
    `wheel.scheduler.claim_ahead`), but never earlier than this. Unset (-1): 30,000, or
    `window_s` when that is less, and never less than `prefetch_ms`."""
    handover_rate_per_s: float = 5000.0
    """Runs a second this node is assumed to hand over until it has measured it (a busy
    node measures it within seconds): lower claims crowded instants earlier."""
    claim_slice_ms: int = 50
    """Occurrences are handed to claims in slices this long (bigger, fewer claim statements);
    must be well under `lead_ms` so a slice is claimed and dispatched before its instants."""
    lease_s: float = 30.0
    """A claimed run's lease: its executor must heartbeat or report within it, or the run is
    reaped as a failed attempt (and retried under its policy)."""
    heartbeat_interval_s: float = 5.0
    """How often executors are asked to heartbeat a running run (well under `lease_s`)."""
    claim_batch: int = 1000
    """Most runs in one claim statement."""
    claim_concurrency: int = 2
    """Claim statements in flight at once."""
    record_batch: int = 1000
    """Most results (or heartbeats) in one record statement."""
    reap_interval_s: float = 1.0
    """How often expired leases of owned partitions are reaped."""
    dispatch_stall_s: float = 30.0
    """Readiness fails (NOT_SERVING, saying why) while a pool's ready runs have waited this
    long past their instants with executors holding credit for it and nothing dispatched."""
    tenant_in_flight_cap: int = 1000
    """Most executions of one tenant this node has claimed and not seen finish."""
    breaker_failures: int = 5
    """Consecutive failures of a task type that open its circuit breaker."""
    breaker_cooldown_s: float = 30.0
    """How long an open breaker holds its task type's runs before one goes as a probe."""
    catch_up_rate_per_s: int = 2000
    """Most overdue occurrences released per second when a backlog is found (recovery)."""
    max_clock_offset_ms: float = 500.0
    """Beyond this offset from the database clock the node takes no partitions."""
    clock_check_interval_s: float = 10.0
    """How often the offset from the database clock is measured."""
    retention_days: int = 30
    """Executions and attempts are kept this many days (older day partitions are dropped)."""
    drain_timeout_s: float = 10.0
    """On stop, how long results already received may take to be recorded."""
    pool_size: int = 8
    """Postgres connections for claims, results, loading and materialising (heartbeats have
    one more of their own)."""
    api_pool_size: int = 4
    """Postgres connections for the public API, apart from the scheduling work's."""
    notify_poll_s: float = 1.0
    """How often the node looks for notifications due to be sent."""
    notify_timeout_s: float = 10.0
    """The longest one notification's POST may take before it counts as failed."""
    notify_max_tries: int = 30
    """Tries of one notification before it is given up: backoff from 2 s doubling to 1 h,
    so 30 tries span 9.5 to 19 hours (a receiver down overnight still gets it)."""
    notify_deny_networks: str = ",".join(DEFAULT_DENIED)
    """Comma-separated networks notifications and HTTP tasks are never sent to (link-local,
    metadata...). A shared deployment adds its private ranges; empty denies nothing."""
    http_task_concurrency: int = 256
    """HTTP tasks' requests one node has out at once (its HTTP runner's credit)."""
    require_synchronous_standby: bool = False
    """Refuse to start unless Postgres commits wait for a synchronous standby (otherwise an
    acknowledged job is lost with the primary's disk; without this the node warns, and
    keeps warning, in its log, metrics, `wheel nodes` and the dashboard)."""
    durability_check_interval_s: float = 60.0
    """How often the node reads again whether Postgres has a synchronous standby."""
    tracing: bool = False
    """Send OpenTelemetry traces of every run (the `otel` extra; the standard OTEL_*
    variables configure the exporter, OTLP by default)."""

    def etcd(self) -> EtcdSettings:
        """How to reach etcd; the password read from its file when one is named."""
        password = self.etcd_password
        if self.etcd_password_file:
            try:
                password = Path(self.etcd_password_file).read_text().strip()
            except OSError as exc:
                raise ConfigError("etcd_password_file", f"cannot read it: {exc.strerror}") from None
        return EtcdSettings.of_config(self, password=password)

    @property
    def secure_cookie(self) -> bool:
        """Whether browsers reach the dashboard over https (its session cookie is Secure)."""
        return self.http_public_url.lower().startswith("https://")

    @property
    def allowed_origins(self) -> tuple[str, ...]:
        """`cors_origins` as browsers send them in Origin (lower case, no default port)."""
        return _origins(self.cors_origins)

    @property
    def denied_networks(self) -> tuple[str, ...]:
        return tuple(n.strip() for n in self.notify_deny_networks.split(",") if n.strip())

    def __post_init__(self) -> None:
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ConfigError("tls_key_file", "tls_cert_file and tls_key_file go together")
        for name in ("tls_cert_file", "tls_key_file"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise ConfigError(name, f"{path} is not a readable file")
        if self.token_cache_s < 0:
            raise ConfigError("token_cache_s", "must not be negative")
        if not self.node_id:
            raise ConfigError("node_id", "must not be empty")
        if "/" in self.node_id:
            raise ConfigError("node_id", "must not contain '/'")
        if not self.postgres_dsn:
            raise ConfigError("postgres_dsn", "must not be empty")
        if not self.etcd_endpoint:
            raise ConfigError("etcd_endpoint", "must not be empty")
        self.etcd().check()
        positive = (
            "partitions", "session_ttl_s", "window_s", "load_interval_s", "catch_up_interval_s",
            "materialise_interval_s", "horizon_s", "lease_s", "heartbeat_interval_s",
            "claim_batch", "claim_concurrency", "record_batch", "reap_interval_s",
            "dispatch_stall_s", "tenant_in_flight_cap", "breaker_failures", "breaker_cooldown_s",
            "catch_up_rate_per_s", "handover_rate_per_s", "max_clock_offset_ms",
            "clock_check_interval_s", "durability_check_interval_s",
            "retention_days", "pool_size", "api_pool_size", "notify_poll_s",
            "notify_timeout_s", "notify_max_tries", "http_task_concurrency",
        )  # fmt: skip
        for name in positive:
            value = getattr(self, name)
            if value <= 0:
                raise ConfigError(name, f"must be > 0, got {value}")
        for network in self.denied_networks:
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError:
                raise ConfigError("notify_deny_networks", f"{network!r} is not a network") from None
        if self.http_public_url:
            _check_public_url(self.http_public_url, dashboard=bool(self.http_listen))
        if self.cors_origins.strip() and not self.http_listen:
            raise ConfigError("cors_origins", "is for the JSON API on http_listen: set it too")
        _origins(self.cors_origins)
        if self.lead_ms < 0:
            raise ConfigError("lead_ms", f"must be >= 0, got {self.lead_ms}")
        if self.prefetch_ms == -1:
            derived = max(self.lead_ms, min(_DEFAULT_PREFETCH_MS, int(self.lease_s * 500)))
            object.__setattr__(self, "prefetch_ms", derived)
        if self.prefetch_ms < self.lead_ms:
            raise ConfigError("prefetch_ms", f"must be >= lead_ms ({self.lead_ms})")
        if self.prefetch_ms * 2 > self.lease_s * 1000:
            raise ConfigError("prefetch_ms", "must be at most half of lease_s: a held run's lease")
        if self.prefetch_max_ms == -1:
            derived = max(
                self.prefetch_ms, min(_DEFAULT_PREFETCH_MAX_MS, int(self.window_s * 1000))
            )
            object.__setattr__(self, "prefetch_max_ms", derived)
        if self.prefetch_max_ms < self.prefetch_ms:
            raise ConfigError("prefetch_max_ms", f"must be >= prefetch_ms ({self.prefetch_ms})")
        if self.prefetch_max_ms > self.window_s * 1000:
            raise ConfigError("prefetch_max_ms", f"must be within window_s ({self.window_s:g} s)")
        if self.claim_slice_ms < 1:
            raise ConfigError("claim_slice_ms", f"must be >= 1, got {self.claim_slice_ms}")
        if self.claim_slice_ms > self.lead_ms > 0:
            raise ConfigError("claim_slice_ms", "must not exceed lead_ms")
        if self.window_s > 900:
            # The insert trigger notifies owners of occurrences due within 15 minutes.
            raise ConfigError("window_s", "must be at most 900 (15 minutes)")
        if self.heartbeat_interval_s * 2 > self.lease_s:
            raise ConfigError("heartbeat_interval_s", "must be at most half of lease_s")
        if self.horizon_s < self.window_s:
            raise ConfigError("horizon_s", "must be at least window_s")

    @property
    def window(self) -> timedelta:
        return timedelta(seconds=self.window_s)


def _check_public_url(url: str, *, dashboard: bool) -> None:
    """An http(s) origin: scheme, host and port, nothing more (the dashboard's pages live at
    the root, and the cookie's Path is /)."""
    field = "http_public_url"
    if not dashboard:
        raise ConfigError(field, "is where browsers reach the dashboard: set http_listen too")
    try:
        parsed = yarl.URL(url)
    except ValueError as exc:
        raise ConfigError(field, f"not a URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.raw_host:
        raise ConfigError(field, f"{url!r} is not an http:// or https:// URL with a host")
    if not _only_origin(parsed):
        raise ConfigError(field, "names the dashboard's origin only: no user, path or query")


def _origins(text: str) -> tuple[str, ...]:
    return tuple(_origin(value.strip()) for value in text.split(",") if value.strip())


def _origin(value: str) -> str:
    """One of `cors_origins`, checked and written as a browser's Origin header writes it."""
    field = "cors_origins"
    if value == "*":
        raise ConfigError(field, "name each origin: '*' would let every site's pages call the API")
    try:
        url = yarl.URL(value)
    except ValueError as exc:
        raise ConfigError(field, f"{value!r} is not a URL: {exc}") from None
    if url.scheme.lower() not in ("http", "https") or not url.raw_host:
        raise ConfigError(field, f"{value!r} is not an origin: scheme://host[:port]")
    if not _only_origin(url):
        raise ConfigError(field, f"{value!r} is not an origin: scheme://host[:port], no path")
    return str(url.origin())


def _only_origin(url: yarl.URL) -> bool:
    """Whether `url` says no more than its origin: no user, path, query or fragment."""
    return not (
        url.raw_user is not None
        or url.raw_path not in ("", "/")
        or url.raw_query_string
        or url.raw_fragment
    )
