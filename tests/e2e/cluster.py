"""A real local cluster of processes: `wheel scheduler` nodes and `wheel executor`s.

Each process runs as a subprocess against the test run's etcd and this
test's Postgres database; its JSON log goes to a file the test can read.
Executors may be supervised (restarted when they die), as a Deployment
would. Everything still running is SIGKILLed at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from wheel.local.ports import free_port
from wheel.local.process import spawn

ROOT = Path(__file__).resolve().parents[2]
WHEEL = str(Path(sys.executable).parent / "wheel")

FAST = {
    "partitions": 16,
    "session-ttl-s": 3,
    "window-s": 60,
    "load-interval-s": 0.5,
    "catch-up-interval-s": 1,
    "materialise-interval-s": 1,
    "horizon-s": 120,
    "lease-s": 3,
    "prefetch-ms": 1000,
    "heartbeat-interval-s": 1,
    "reap-interval-s": 0.25,
    "pool-size": 4,
}


@dataclass
class Process:
    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None
    starts: int = 0
    env: dict[str, str] = field(default_factory=dict)
    exits: list[int] = field(default_factory=list)
    """The exit codes of the runs a supervisor restarted, in order."""
    address: str = ""
    """A node's gRPC address (host:port); empty for an executor."""

    def start(self) -> None:
        # Tied to this process: a test or benchmark killed outright leaves no cluster behind.
        self.popen = spawn(
            self.argv, log_path=self.log_path, death_signal=signal.SIGKILL, cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
        )  # fmt: skip
        self.starts += 1

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.running():
            os.kill(self.pid, sig)

    def events(self) -> Iterator[dict[str, Any]]:
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                with contextlib.suppress(json.JSONDecodeError):
                    yield json.loads(line)


@dataclass
class Cluster:
    dsn: str
    etcd_port: int
    name: str
    logs: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="wheel-e2e-")))
    nodes: dict[str, Process] = field(default_factory=dict)
    executors: dict[str, Process] = field(default_factory=dict)
    _supervised: set[str] = field(default_factory=set)
    _executor_token: str = ""
    _supervisor: asyncio.Task[None] | None = None

    def start_node(self, node_id: str, **overrides: object) -> Process:
        settings = {
            **FAST,
            "listen": f"127.0.0.1:{free_port()}",  # known up front: executors are told it
            **{k.replace("_", "-"): v for k, v in overrides.items()},
        }
        argv = [
            WHEEL, "scheduler", "--node-id", node_id, "--postgres-dsn", self.dsn,
            "--etcd-endpoint", f"127.0.0.1:{self.etcd_port}", "--cluster", self.name,
        ]  # fmt: skip
        for option, value in settings.items():
            argv += [f"--{option}", str(value)]
        process = Process(node_id, argv, self.logs / f"{node_id}.log")
        process.address = str(settings["listen"])
        process.start()
        self.nodes[node_id] = process
        return process

    def executor_token(self) -> str:
        """An executor token for this cluster's executors, made once with the real command."""
        if not self._executor_token:
            made = subprocess.run(
                [WHEEL, "tokens", "create", "--executor", "--name", self.name,
                 "--executor-id", "executor-*", "--dsn", self.dsn, "--output", "json"],
                capture_output=True, text=True, check=True, timeout=60,
            )  # fmt: skip
            self._executor_token = json.loads(made.stdout)["secret"]
        return self._executor_token

    def start_executor(
        self,
        executor_id: str,
        *,
        concurrency: int = 16,
        supervise: bool = False,
        via_etcd: bool = False,
        extra: Sequence[str] = (),
    ) -> Process:
        """An executor told the nodes started so far (it learns the rest from them); with
        `via_etcd`, one that finds the nodes in etcd instead."""
        seeds = [arg for node in self.nodes.values() for arg in ("--node", node.address)]
        if via_etcd or not seeds:
            seeds = ["--etcd", f"http://127.0.0.1:{self.etcd_port}"]
        argv = [
            WHEEL, "executor", "--executor-id", executor_id, "--cluster", self.name, *seeds,
            "--tasks", "tests.e2e.tasks", "--pool", f"default={concurrency}",
            "--drain-timeout", "2", *extra,
        ]  # fmt: skip
        process = Process(executor_id, argv, self.logs / f"{executor_id}.log",
                          env={"WHEEL_EXECUTOR_TOKEN": self.executor_token()})  # fmt: skip
        process.start()
        self.executors[executor_id] = process
        if supervise:
            self._supervised.add(executor_id)
            if self._supervisor is None:
                self._supervisor = asyncio.create_task(self._supervise())
        return process

    async def _supervise(self) -> None:
        """Restart supervised executors that died (a Deployment's controller, in short)."""
        while True:
            for executor_id in self._supervised:
                process = self.executors[executor_id]
                if not process.running():
                    assert process.popen is not None
                    process.exits.append(process.popen.returncode)
                    process.start()
            await asyncio.sleep(0.2)  # a controller's resync period

    async def wait_until(self, condition: Callable[[], bool], within: float = 60.0) -> None:
        """Poll a condition on other processes' state (there is no event to await)."""
        async with asyncio.timeout(within):
            while True:
                if condition():
                    return
                await asyncio.sleep(0.1)  # another process's state: there is no event

    def connected(self, node_id: str, executor_id: str) -> bool:
        return any(
            e.get("event") == "stream.connected" and e.get("executor") == executor_id
            for e in self.nodes[node_id].events()
        )

    def partitions_owned(self, node_id: str) -> int:
        held = 0
        for event in self.nodes[node_id].events():
            if event.get("event") == "node.partition_acquired":
                held += 1
            elif event.get("event") == "node.partition_released":
                held -= 1
        return held

    async def ready(self, within: float = 60.0, partitions: int = int(FAST["partitions"])) -> None:
        """Every partition owned, every executor connected to every node."""

        def settled() -> bool:
            live = [n for n, p in self.nodes.items() if p.running()]
            owned = sum(self.partitions_owned(n) for n in live)
            wired = all(self.connected(n, e) for n in live for e in self.executors
                        if self.executors[e].running())  # fmt: skip
            return owned == partitions and wired

        await self.wait_until(settled, within)

    def stop(self) -> None:
        if self._supervisor is not None:
            self._supervisor.cancel()
        for process in [*self.executors.values(), *self.nodes.values()]:
            if process.running():
                process.signal(signal.SIGCONT)
                process.signal(signal.SIGKILL)
                assert process.popen is not None
                process.popen.wait(10)

    def query(self, statement: str, *params: object) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            return conn.execute(statement, params).fetchall()  # type: ignore[arg-type]

    def dump_logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.log_path.read_text()[-4000:]}"
                         for p in [*self.nodes.values(), *self.executors.values()])  # fmt: skip
