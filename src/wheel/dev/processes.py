"""`wheel dev`'s own processes: scheduler nodes and an executor, started, probed, stopped.

Each is a real `wheel scheduler` / `wheel executor` process, as production
runs them, started with `wheel.local.process.spawn`: in its own session (a
terminal's Ctrl-C reaches only `wheel dev`, which stops them in order) and
tied to `wheel dev` with PR_SET_PDEATHSIG (SIGKILL), so none outlives it
even when it is killed outright. Their JSON logs go to files.

Ports: a person likes fixed ones (the API at 7070, 7071, ...), tests need
free ones. `plan_ports` gives the fixed range when asked for or when it is
free, free ports on request (0), and refuses an explicitly asked-for port
that is taken: a typo never turns silently into another port.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from wheel.errors import ConfigError
from wheel.local import process
from wheel.local.ports import LOOPBACK, free_port

PROBE_TIMEOUT_S = 1.0


def port_is_free(port: int) -> bool:
    """Whether nothing listens on 127.0.0.1:`port` (a lingering TIME_WAIT does not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def plan_ports(
    field_name: str,
    base: int | None,
    count: int,
    *,
    default: int,
    taken: Collection[int] = (),
    is_free: Callable[[int], bool] = port_is_free,
    pick_free: Callable[[], int] = free_port,
) -> tuple[list[int], str]:
    """`count` consecutive ports from `base`, and a note when the default range was busy.

    base None: `default`.. when every one is free, else free ports (the note
    says why); 0: free ports; N: N..N+count-1, each must be free (else
    ConfigError). Ports in `taken` are never returned.
    """
    if base is None or base > 0:
        start = default if base is None else base
        wanted = list(range(start, start + count))
        busy = [p for p in wanted if p > 65535 or p in taken or not is_free(p)]
        if not busy:
            return wanted, ""
        if base is not None:
            raise ConfigError(field_name, f"port {busy[0]} is in use (0 picks free ports)")
        note = f"{_span(wanted)} in use: free ports instead"
    else:
        note = ""
    chosen: list[int] = []
    while len(chosen) < count:
        port = pick_free()
        if port not in chosen and port not in taken:
            chosen.append(port)
    return chosen, note


def _span(ports: list[int]) -> str:
    return str(ports[0]) if len(ports) == 1 else f"{ports[0]}-{ports[-1]}"


def child_environment(extra: dict[str, str]) -> dict[str, str]:
    """This environment without WHEEL_* variables (the dev cluster is configured by
    `wheel dev` alone: an exported WHEEL_CLUSTER or WHEEL_CONFIG must not reshape it),
    plus `extra`, with unbuffered Python output so logs are current, and gRPC's fork
    handlers off before any child imports gRPC (they printed `fork_posix.cc` lines at
    every start; `wheel.cli` sets the same for the process itself)."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("WHEEL_")}
    return {**kept, "PYTHONUNBUFFERED": "1", "GRPC_ENABLE_FORK_SUPPORT": "0", **extra}


def wheel_command(*args: str) -> list[str]:
    """`python -m wheel ...` with this interpreter: the same installation as `wheel dev`."""
    return [sys.executable, "-m", "wheel", *args]


@dataclass
class Child:
    """One `wheel` process of the dev cluster."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] = field(repr=False)
    address: str = ""
    """host:port of its gRPC API (nodes); empty for the executor."""
    metrics: str = ""
    """host:port of its Prometheus metrics."""
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    reported: bool = False
    """Whether its unexpected exit was already reported."""

    def start(self) -> None:
        """Spawn it (from the main thread: PR_SET_PDEATHSIG follows the spawning thread)."""
        self.popen = process.spawn(
            self.argv, log_path=self.log_path, death_signal=signal.SIGKILL, env=self.env
        )

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    @property
    def exit_code(self) -> int | None:
        """None while it runs (or before it started)."""
        return None if self.popen is None else self.popen.poll()

    def describe(self) -> dict[str, object]:
        """Its entry in dev.json."""
        entry: dict[str, object] = {"id": self.name, "pid": self.pid, "log": str(self.log_path)}
        if self.address:
            entry["address"] = self.address
        if self.metrics:
            entry["metrics"] = self.metrics
        return entry


def describe_exit(code: int) -> str:
    """'exit code 1', or 'ended by SIGKILL' for a negative (signal) return code."""
    return f"exit code {code}" if code >= 0 else f"ended by {signal.Signals(-code).name}"


@dataclass(frozen=True, slots=True)
class Stopped:
    name: str
    exit_code: int
    clean: bool
    """Whether it exited on its own after the signal (False: it was killed)."""
    seconds: float


async def stop_all(
    children: Iterable[Child], *, timeout_s: float, hurry: asyncio.Event
) -> list[Stopped]:
    """SIGTERM every running child at once; SIGKILL what remains after `timeout_s` or
    as soon as `hurry` is set (a second Ctrl-C). Waits on the exits, never polls."""
    running = [c for c in children if c.popen is not None and c.popen.poll() is None]
    began = time.monotonic()
    for child in running:
        assert child.popen is not None
        child.popen.send_signal(signal.SIGTERM)
    exits = {
        asyncio.create_task(asyncio.to_thread(c.popen.wait)): c  # type: ignore[union-attr]
        for c in running
    }
    ended: dict[str, float] = {}
    hurried = asyncio.create_task(hurry.wait())
    pending = set(exits)
    deadline = began + timeout_s
    try:
        while pending and not hurried.done():
            done, _ = await asyncio.wait(
                pending | {hurried},
                timeout=max(0.0, deadline - time.monotonic()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if not done:
                break
            for task in done - {hurried}:
                pending.discard(task)
                ended[exits[task].name] = time.monotonic() - began
    finally:
        hurried.cancel()
    for task in pending:  # too slow, or asked to hurry
        exits[task].popen.kill()  # type: ignore[union-attr]
    if pending:
        await asyncio.wait(pending)
    results = []
    for child in running:
        assert child.popen is not None
        took = ended.get(child.name, time.monotonic() - began)
        code = child.popen.returncode
        results.append(Stopped(child.name, code, child.name in ended, took))
    return results


async def node_serving(address: str) -> bool:
    """Whether the node's standard gRPC health service says SERVING (joined, loaded,
    clock sane)."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)  # the type stubs lack its methods
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=PROBE_TIMEOUT_S)
        except grpc.aio.AioRpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def metric_value(exposition: str, name: str) -> float | None:
    """The value of an unlabelled metric in Prometheus text exposition, None if absent."""
    for line in exposition.splitlines():
        metric, _, value = line.partition(" ")
        if metric == name:
            return float(value.split()[0])
    return None


def _scrape(address: str) -> str:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=PROBE_TIMEOUT_S) as reply:
        text: str = reply.read().decode()
        return text


async def executor_streams(metrics_address: str) -> int:
    """How many nodes the executor has a live stream to (from its metrics; 0 if unreachable)."""
    try:
        text = await asyncio.to_thread(_scrape, metrics_address)
    except OSError:
        return 0
    return int(metric_value(text, "wheel_executor_streams") or 0)
