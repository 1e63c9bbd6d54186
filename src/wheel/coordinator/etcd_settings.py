"""How a process reaches etcd: endpoints, TLS and a user, checked before any connection.

Apart from the client (`coordinator/etcd.py`) so that a process's configuration,
and the `--help` built from it, can name and check these settings without
loading gRPC.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from wheel.errors import ConfigError


class EtcdOptions(Protocol):
    """The etcd fields a process's configuration carries."""

    @property
    def etcd_endpoint(self) -> str: ...
    @property
    def etcd_ca_file(self) -> str: ...
    @property
    def etcd_cert_file(self) -> str: ...
    @property
    def etcd_key_file(self) -> str: ...
    @property
    def etcd_user(self) -> str: ...
    @property
    def etcd_password(self) -> str: ...


@dataclass(frozen=True, slots=True)
class EtcdSettings:
    """How to reach etcd: endpoints, TLS and a user. Secrets come from files or the environment."""

    endpoints: tuple[str, ...]
    """`host:port`, `http://host:port` or `https://host:port` (TLS)."""
    ca_file: str = ""
    """PEM of the CA that signed etcd's server certificates (empty: the system's roots)."""
    cert_file: str = ""
    """PEM client certificate, for an etcd that asks for one (--client-cert-auth)."""
    key_file: str = ""
    user: str = ""
    password: str = field(default="", repr=False)
    timeout_s: float = 5.0

    @classmethod
    def of(cls, endpoints: str | Sequence[str], **options: Any) -> EtcdSettings:
        """From a comma-separated string or a sequence of endpoints."""
        listed = endpoints.split(",") if isinstance(endpoints, str) else list(endpoints)
        return cls(tuple(e.strip() for e in listed if e.strip()), **options)

    @classmethod
    def of_config(cls, config: EtcdOptions, *, password: str | None = None) -> EtcdSettings:
        """From a process's configuration (a node's or an executor's: the same field names)."""
        return cls.of(
            config.etcd_endpoint,
            ca_file=config.etcd_ca_file,
            cert_file=config.etcd_cert_file,
            key_file=config.etcd_key_file,
            user=config.etcd_user,
            password=config.etcd_password if password is None else password,
        )

    @property
    def tls(self) -> bool:
        return bool(self.ca_file or self.cert_file) or any(
            e.startswith("https://") for e in self.endpoints
        )

    def check(self) -> None:
        """ConfigError naming the first setting that cannot work."""
        if not self.endpoints:
            raise ConfigError("etcd_endpoint", "names no endpoint")
        for endpoint in self.endpoints:
            host, _, port = address(endpoint).rpartition(":")
            if not host or not port.isdigit():
                raise ConfigError("etcd_endpoint", f"{endpoint!r} is not host:port")
        if bool(self.cert_file) != bool(self.key_file):
            raise ConfigError("etcd_key_file", "etcd_cert_file and etcd_key_file go together")
        for name in ("ca_file", "cert_file", "key_file"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise ConfigError(f"etcd_{name}", f"{path} is not a readable file")
        if self.password and not self.user:
            raise ConfigError("etcd_user", "a password needs a user")


def address(endpoint: str) -> str:
    """`host:port` of an endpoint written with or without its scheme."""
    return endpoint.removeprefix("http://").removeprefix("https://").rstrip("/")
