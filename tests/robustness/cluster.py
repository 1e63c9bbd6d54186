"""The robustness run's cluster: its own etcd and Postgres (so both can be restarted),
two scheduler nodes and two executors as real processes, and the faults done to them."""

from __future__ import annotations

import asyncio
import functools
import json
import shutil
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from tests.e2e.cluster import WHEEL, Cluster, Process
from tests.robustness.plan import Fault
from tests.services import CrashablePostgres, service_data_root
from wheel.local import process
from wheel.local.etcd import EtcdServer

TASKS = "tests.robustness.tasks"


class RestartableEtcd:
    """An etcd of its own, killed outright and started again on its ports with its data.

    Started on a thread of its own, which it dies with (its death signal is tied to the
    thread that spawned it), as tests.services.CrashablePostgres is.
    """

    def __init__(self, root: Path, server: EtcdServer, spawner: ThreadPoolExecutor) -> None:
        self._root, self.server, self._spawner = root, server, spawner

    @classmethod
    async def start(cls) -> RestartableEtcd:
        root, spawner = service_data_root(), ThreadPoolExecutor(1, "etcd")
        start = functools.partial(EtcdServer.start, root / "etcd", durable=False)
        server = await asyncio.get_running_loop().run_in_executor(spawner, start)
        return cls(root, server, spawner)

    @property
    def port(self) -> int:
        return self.server.port

    async def kill(self) -> None:
        await asyncio.to_thread(process.stop, self.server.process, signal.SIGKILL, 15)

    async def restart(self) -> None:
        start = functools.partial(EtcdServer.start, self._root / "etcd", port=self.server.port,
                                  peer_port=self.server.peer_port, durable=False)  # fmt: skip
        self.server = await asyncio.get_running_loop().run_in_executor(self._spawner, start)

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._spawner, self.server.stop)
        self._spawner.shutdown()
        shutil.rmtree(self._root, ignore_errors=True)


def start_executor(cluster: Cluster, executor_id: str, starts: Path) -> Process:
    """An executor running tests.robustness.tasks, told both nodes, its handlers' starts
    written to `starts`."""
    seeds = [arg for node in cluster.nodes.values() for arg in ("--node", node.address)]
    argv = [
        WHEEL, "executor", "--executor-id", executor_id, "--cluster", cluster.name, *seeds,
        "--tasks", TASKS, "--pool", "default=8", "--drain-timeout", "2",
    ]  # fmt: skip
    env = {
        "WHEEL_EXECUTOR_TOKEN": cluster.executor_token(),
        "WHEEL_ROBUSTNESS_STARTS": str(starts),
        "WHEEL_ROBUSTNESS_EXECUTOR": executor_id,
    }
    running = Process(executor_id, argv, cluster.logs / f"{executor_id}.log", env=env)
    running.start()
    cluster.executors[executor_id] = running
    return running


class Injector:
    """Does a plan's faults to the cluster, one at a time, each undone after its span."""

    def __init__(
        self, cluster: Cluster, etcd: RestartableEtcd, postgres: CrashablePostgres
    ) -> None:
        self.cluster, self.etcd, self.postgres = cluster, etcd, postgres
        self.done: list[dict[str, object]] = []

    def _process(self, target: str) -> Process:
        return {**self.cluster.nodes, **self.cluster.executors}[target]

    async def inject(self, fault: Fault) -> None:
        began = datetime.now(UTC)
        if fault.target == "etcd":
            await self.etcd.kill()
        elif fault.target == "postgres":
            await self.postgres.crash()
        else:
            victim = self._process(fault.target)
            victim.signal(signal.SIGKILL if fault.action == "kill" else signal.SIGSTOP)
            if fault.action == "kill":
                assert victim.popen is not None
                await asyncio.to_thread(victim.popen.wait, 15)
        await asyncio.sleep(fault.for_s)  # the fault's span: what is injected, not a wait
        if fault.target == "etcd":
            await self.etcd.restart()
        elif fault.target == "postgres":
            await self.postgres.restart()
        elif fault.action == "kill":
            self._process(fault.target).start()
        else:
            self._process(fault.target).signal(signal.SIGCONT)
        self.done.append({"kind": "fault", "target": fault.target, "action": fault.action,
                          "began": began.isoformat(),
                          "ended": datetime.now(UTC).isoformat()})  # fmt: skip


def executor_events(cluster: Cluster) -> list[dict[str, object]]:
    """What the executors logged about runs they gave back or results they dropped."""
    found = []
    for name, running in cluster.executors.items():
        for event in running.events():
            if str(event.get("event", "")).startswith("executions."):
                found.append({"kind": "executor_event", "executor": name,
                              "detail": json.dumps(event, default=str)})  # fmt: skip
    return found
