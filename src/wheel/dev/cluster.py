"""`wheel dev`: a whole local cluster in one command, stopped by Ctrl-C.

    etcd, Postgres            wheel.local, in the data directory (reused across runs)
    dev-0 .. dev-2            `wheel scheduler` processes: the gRPC API at 127.0.0.1:7070..
    dev-executor              `wheel executor --tasks wheel.dev.tasks` (and the user's modules)
    tenant `dev`, a token     made once per data directory (wheel.dev.examples)
    your executors' token     likewise: kept in dev.json while it authenticates
    example jobs              made once per data directory (wheel.dev.examples)
    the live view             the dev tenant's executions as they happen (wheel.dev.view)

Start-up order: etcd and Postgres, migrations, the cluster's partition
count, the tenant and token, the processes; `wheel dev: ready` once every
node says SERVING and the executor streams from every node; then the
examples and the view. Stopping (SIGINT or SIGTERM, at any point:
wheel.signals) goes the other way: the executor drains, the nodes hand
their partitions over, then Postgres and etcd stop. A second signal kills
what is left.

`dev.json` in the data directory records the endpoints, every process id
and the dev token, mode 0600, for tools and tests to find the cluster: a
development convenience only — a production token never belongs in a file
like it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.ownership import partition_count
from wheel.dev import examples as dev_examples
from wheel.dev.banner import banner
from wheel.dev.config import DevConfig, previous_token, write_state
from wheel.dev.lock import DataDirLock
from wheel.dev.output import say
from wheel.dev.processes import (
    Child,
    Stopped,
    child_environment,
    describe_exit,
    executor_streams,
    node_serving,
    plan_ports,
    stop_all,
    wheel_command,
)
from wheel.dev.view import LiveView
from wheel.errors import LocalServiceError, WheelError
from wheel.local import LocalServices
from wheel.local.ports import LOOPBACK
from wheel.model.ids import TenantId
from wheel.model.jobs import JobSpec
from wheel.signals import StopSignals
from wheel.store import Store
from wheel.store.migrate import migrate as migrate_schema

DATABASE = "wheel"
CLUSTER = "dev"
EXECUTOR_ID = "dev-executor"
YOUR_EXECUTORS = "wheel dev: your executors"
TASKS = "wheel.dev.tasks"
DEFAULT_API_PORT = 7070
DEFAULT_METRICS_PORT = 9100
DEFAULT_DASHBOARD_PORT = 7979
READY_TIMEOUT_S = 90.0
READY_POLL_S = 0.1
EXECUTOR_STOP_S = 20.0
"""Its drain (5 s) and result flush (up to 10 s), with room to spare."""
NODE_STOP_S = 25.0


@dataclass
class DevCluster:
    """The processes of a dev cluster and what it was given: built by `start`."""

    config: DevConfig
    services: LocalServices
    dsn: str
    nodes: list[Child] = field(default_factory=list)
    executor: Child | None = None
    notes: list[str] = field(default_factory=list)
    tenant: TenantId | None = None
    token: str = ""
    token_is_new: bool = False
    executor_token: str = field(default="", repr=False)
    executor_token_id: uuid.UUID | None = None
    your_executor_token: str = field(default="", repr=False)
    """For the reader's own `wheel executor`s: any executor id, kept across restarts."""
    examples_made: list[JobSpec] = field(default_factory=list)
    dashboard: str = ""
    """The web dashboard's URL (node 0 serves it)."""

    @property
    def name(self) -> str:
        return CLUSTER

    @property
    def task_modules(self) -> list[str]:
        return [TASKS, *self.config.task_modules]

    @property
    def children(self) -> list[Child]:
        return [*self.nodes, *([self.executor] if self.executor else [])]

    @property
    def endpoints(self) -> list[str]:
        return [node.address for node in self.nodes]

    async def start(self) -> None:
        """Everything up to `ready`: tenant, token, processes, readiness, examples."""
        config = self.config
        etcd = await Etcd.connect(self.services.etcd.endpoint)
        try:  # fixes the partition count of a new cluster (nodes and examples agree on it)
            partitions = await partition_count(etcd, Layout(CLUSTER), config.partitions)
        finally:
            await etcd.close()
        store = await Store.open(self.dsn, min_size=1, max_size=2)
        try:
            self.tenant = await dev_examples.ensure_tenant(store)
            previous = previous_token(config.state_path)
            self.token, self.token_is_new = await dev_examples.ensure_token(
                store, self.tenant, previous
            )
            # The executor's own token (the stream refuses tenants' tokens): a fresh one
            # each start, handed over in its environment, never written down.
            info, self.executor_token = await store.tenants.create_executor_token(EXECUTOR_ID)
            self.executor_token_id = info.id
            # And one for the reader's own executors (any id): in dev.json and kept, as the
            # tenant's token is, so an executor started from the banner survives a restart.
            self.your_executor_token, _ = await dev_examples.ensure_executor_token(
                store, YOUR_EXECUTORS, previous_token(config.state_path, "executor_token")
            )
            self.spawn()
            write_state(config.state_path, self.state())
            await self.wait_ready()
            if config.examples:
                self.examples_made = await dev_examples.seed_examples(
                    store, self.tenant, partitions=partitions, now=datetime.now(UTC)
                )
        finally:
            await store.close()

    def spawn(self) -> None:
        """Start the nodes and the executor (on the main thread: see wheel.local.process)."""
        config, services = self.config, self.services
        taken = {services.etcd.port, services.etcd.peer_port, services.postgres.port}
        api, note = plan_ports("api_port", config.api_port, config.nodes,
                               default=DEFAULT_API_PORT, taken=taken)  # fmt: skip
        self.notes += [f"API ports {note}"] if note else []
        metrics, note = plan_ports("metrics_port", config.metrics_port, config.nodes + 1,
                                   default=DEFAULT_METRICS_PORT, taken={*taken, *api})  # fmt: skip
        self.notes += [f"metrics ports {note}"] if note else []
        (web,), note = plan_ports("dashboard_port", None, 1, default=DEFAULT_DASHBOARD_PORT,
                                  taken={*taken, *api, *metrics})  # fmt: skip
        self.notes += [f"dashboard port {note}"] if note else []
        self.dashboard = f"http://{LOOPBACK}:{web}"
        logs = config.data_dir / "logs"
        logs.mkdir(exist_ok=True)
        node_env = child_environment({"WHEEL_POSTGRES_DSN": self.dsn})
        for index, (port, metrics_port) in enumerate(zip(api, metrics, strict=False)):
            name = f"{CLUSTER}-{index}"
            address, metrics_address = f"{LOOPBACK}:{port}", f"{LOOPBACK}:{metrics_port}"
            argv = wheel_command(
                "scheduler", "--node-id", name, "--cluster", CLUSTER,
                "--etcd-endpoint", f"{LOOPBACK}:{services.etcd.port}", "--listen", address,
                "--metrics-listen", metrics_address, "--partitions", str(config.partitions),
                *(["--http-listen", f"{LOOPBACK}:{web}"] if index == 0 else []),
            )  # fmt: skip
            self.nodes.append(Child(name, argv, logs / f"{name}.log", node_env, address,
                                    metrics_address))  # fmt: skip
        executor_metrics = f"{LOOPBACK}:{metrics[-1]}"
        modules = [arg for module in self.task_modules for arg in ("--tasks", module)]
        seeds = [arg for node in self.nodes for arg in ("--node", node.address)]
        argv = wheel_command(
            "executor", "--executor-id", EXECUTOR_ID, "--cluster", CLUSTER,
            *seeds, *modules, "--pool", "default=16",
            *(arg for pool in config.pools for arg in ("--pool", pool)),
            "--drain-timeout", "5", "--metrics-listen", executor_metrics,
        )  # fmt: skip
        self.executor = Child(EXECUTOR_ID, argv, logs / f"{EXECUTOR_ID}.log",
                              child_environment({"WHEEL_EXECUTOR_TOKEN": self.executor_token}),
                              metrics=executor_metrics)  # fmt: skip
        for child in self.children:
            child.start()

    async def wait_ready(self) -> None:
        """Until every node is SERVING and the executor streams from each; an error
        naming the process (and its log) if one exits first or time runs out."""
        executor = self.executor
        assert executor is not None
        waiting = "nothing"
        try:
            async with asyncio.timeout(READY_TIMEOUT_S):
                while True:
                    for child in self.children:
                        if child.exit_code is not None:
                            reason = f"{describe_exit(child.exit_code)} while starting"
                            raise LocalServiceError(child.name, reason, child.log_path)
                    serving = await asyncio.gather(*(node_serving(n.address) for n in self.nodes))
                    streams = await executor_streams(executor.metrics)
                    if all(serving) and streams >= len(self.nodes):
                        return
                    late = [n.name for n, ok in zip(self.nodes, serving, strict=True) if not ok]
                    if streams < len(self.nodes):
                        late.append(f"{executor.name} (streams from {streams} nodes)")
                    waiting = ", ".join(late)
                    await asyncio.sleep(READY_POLL_S)  # other processes' state: no event to await
        except TimeoutError:
            reason = f"not ready after {READY_TIMEOUT_S:.0f} s (waiting for {waiting})"
            raise LocalServiceError("wheel dev", reason, self.config.data_dir / "logs") from None

    def exits(self) -> list[str]:
        """A line for each process that exited since the last call (for the live view)."""
        lines = []
        for child in self.children:
            if child.exit_code is not None and not child.reported:
                child.reported = True
                ended = describe_exit(child.exit_code)
                lines.append(f"wheel dev: {child.name} {ended} (log: {child.log_path})")
        return lines

    def up(self) -> str:
        """What runs now, for the view's summary: '3/3 nodes, executor up'."""
        nodes = sum(1 for node in self.nodes if node.exit_code is None)
        executor = self.executor is not None and self.executor.exit_code is None
        return f"{nodes}/{len(self.nodes)} nodes, executor {'up' if executor else 'down'}"

    async def stop(self, hurry: asyncio.Event) -> None:
        """The executor drains, then the nodes hand their partitions over."""
        if self.executor is not None:
            _report(await stop_all([self.executor], timeout_s=EXECUTOR_STOP_S, hurry=hurry))
        _report(await stop_all(self.nodes, timeout_s=NODE_STOP_S, hurry=hurry))
        await self._revoke_executor_token()

    async def _revoke_executor_token(self) -> None:
        """The dev executor's token dies with this run (each start makes a new one, handed
        over in its environment); your executors' token stays, with the data directory."""
        if self.executor_token_id is None:
            return
        try:
            store = await Store.open(self.dsn, min_size=1, max_size=1)
            try:
                await store.tenants.revoke_token(self.executor_token_id)
            finally:
                await store.close()
        except WheelError as exc:  # Postgres already gone: the token stays, unused
            say(f"wheel dev: the executor token was not revoked: {exc}", err=True)

    def state(self) -> dict[str, Any]:
        """dev.json: endpoints, process ids and the token."""
        etcd, postgres = self.services.etcd, self.services.postgres
        return {
            "pid": os.getpid(),
            "cluster": CLUSTER,
            "etcd": {"endpoint": etcd.endpoint, "pid": etcd.process.pid},
            "postgres": {"dsn": self.dsn, "pid": postgres.process.pid},
            "endpoints": self.endpoints,
            "nodes": [node.describe() for node in self.nodes],
            "executor": self.executor.describe() if self.executor else None,
            "tenant": {"name": dev_examples.TENANT, "id": str(self.tenant)},
            "token": self.token,
            "executor_token": self.your_executor_token,
        }


async def _first(*awaited: asyncio.Future[Any]) -> None:
    await asyncio.wait(awaited, return_when=asyncio.FIRST_COMPLETED)


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel and await; an error of theirs was raised already (or is beside the point now)."""
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled():
            task.exception()


def _report(stopped: list[Stopped]) -> None:
    for result in stopped:
        how = "stopped" if result.clean else "killed"
        ended = describe_exit(result.exit_code)
        say(f"wheel dev: {result.name} {how}, {ended}, {result.seconds:.1f} s")


async def run(config: DevConfig) -> None:
    """`wheel dev` from start to stop: etcd, Postgres, migrations, the cluster, the view."""
    lock = DataDirLock(config.data_dir)
    lock.acquire()  # before anything starts: a second `wheel dev` here says so at once
    signals = StopSignals()
    try:
        # Blocking on purpose: etcd and Postgres start on the main thread, which they
        # are tied to (PR_SET_PDEATHSIG). A signal meanwhile is acted on once they are up.
        try:
            services = LocalServices.start(
                config.data_dir, etcd_port=config.etcd_port, postgres_port=config.postgres_port
            )
        except LocalServiceError:
            if not signals.stopping:
                raise
            signals.announce()  # Ctrl-C reached initdb too: not a failure, a stop
            return
        with services:
            if not signals.stopping:
                dsn = await prepare_database(services)
                if not signals.stopping:
                    await serve(config, services, dsn, signals)
            signals.announce()
            say("wheel dev: stopping postgres and etcd")
    finally:
        signals.remove()
        lock.release()


async def prepare_database(services: LocalServices) -> str:
    """Create the `wheel` database if need be and migrate it; its DSN."""
    services.postgres.ensure_database(DATABASE)
    dsn = services.postgres.dsn(DATABASE)
    for migration in await migrate_schema(dsn):
        say(f"applied migration {migration.number:04d}_{migration.name}")
    return dsn


async def serve(config: DevConfig, services: LocalServices, dsn: str, signals: StopSignals) -> None:
    """Run the dev cluster on `services` until a signal; then stop it in order."""
    cluster = DevCluster(config, services, dsn)
    tasks: list[asyncio.Task[None]] = []
    try:
        starting = asyncio.create_task(cluster.start())
        tasks.append(starting)
        await _first(starting, signals.first)
        if not signals.first.done():
            starting.result()  # a start-up failure is raised here
            say(banner(cluster))
            say("wheel dev: ready")
            assert cluster.tenant is not None
            view = LiveView(dsn, cluster.tenant, tty=config.table_view(sys.stdout.isatty()),
                            notices=cluster.exits, children=cluster.up)  # fmt: skip
            tasks.append(asyncio.create_task(view.run()))
            await _first(tasks[-1], signals.first)
            if tasks[-1].done():
                tasks[-1].result()  # the view failed: say why, after stopping
        signals.announce()
    finally:
        await _cancel(tasks)
        await cluster.stop(signals.again)
