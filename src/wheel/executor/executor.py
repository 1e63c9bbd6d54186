"""Executor: the whole `wheel executor` process — register, discover nodes, run, drain.

    async with Executor(config, registry):   # start() ... stop()
        ...

`start()` connects to etcd, registers the executor under a session, mirrors
the cluster and keeps a stream open to every listed node. `stop()` drains:
no more credit; waiting dispatches are answered NOT_STARTED; running handlers
get `drain_timeout_s`, then are cancelled and reported FAILED "executor
shutting down"; buffered results get `flush_timeout_s` to be acknowledged;
then the streams close and the session is revoked. `run_executor` is the
same, stopped by SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from types import TracebackType

from prometheus_client import CollectorRegistry

from wheel.coordinator.cluster_view import ClusterView
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.registry import ExecutorInfo
from wheel.errors import ConfigError
from wheel.executor.cluster_feed import ClusterFeed
from wheel.executor.config import ExecutorConfig
from wheel.executor.connection import Identity, NodeLink
from wheel.executor.discovery import ClusterSource, Discovery
from wheel.executor.executions import Executions
from wheel.executor.metrics import ExecutorMetrics, executor_registry
from wheel.executor.outbox import Outbox
from wheel.executor.reach import Reach
from wheel.executor.registration import Registration
from wheel.executor.routing import Router
from wheel.executor.tasks import TaskRegistry, default_registry, load_modules
from wheel.executor.threads import HandlerThreads
from wheel.metrics_http import ProbePort
from wheel.probes import Probes
from wheel.timingwheel import GcGovernor, GcPolicy
from wheel.tls import channel_credentials

log = logging.getLogger(__name__)

_PROBE_TICK_S = 0.5


class Executor:
    def __init__(self, config: ExecutorConfig, registry: TaskRegistry | None = None) -> None:
        self.config = config
        self.registry = default_registry if registry is None else registry
        self.layout = Layout(config.cluster)
        self.identity = Identity(
            executor_id=config.executor_id,
            pools=tuple(sorted(config.pools)),
            task_types=tuple(self.registry.names()),
            capacity=config.capacity,
            slots=tuple(sorted(config.pools.items())),
            hold=config.hold,
        )
        self._threads = HandlerThreads(config.threads)
        self._governor = GcGovernor(GcPolicy())
        self._credentials = channel_credentials(config.tls_ca_file) if config.tls else None
        self._etcd: Etcd | None = None
        self._view: ClusterSource | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping: asyncio.Task[None] | None = None
        self.router: Router | None = None
        self.outbox: Outbox | None = None
        self.executions: Executions | None = None
        self.registration: Registration | None = None
        self.discovery: Discovery | None = None
        self.reach: Reach | None = None
        self.metrics: ExecutorMetrics | None = None
        self.metrics_port = 0
        self.probes = Probes()
        """What /livez and /readyz answer, from before the executor connects anywhere."""
        self._registry: CollectorRegistry | None = None
        self._http: ProbePort | None = None

    async def __aenter__(self) -> Executor:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Serve the probes at once (alive, not ready), then find the nodes and connect."""
        config = self.config
        if config.metrics_listen:
            self._registry = executor_registry()
            self._http = ProbePort.open(
                self._registry, config.metrics_listen, self.probes, self._watch_readiness
            )
            self.metrics_port = self._http.endpoint.port
        try:
            await self._start()
        except BaseException:
            self._close_http()
            raise

    def _close_http(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    async def _watch_readiness(self) -> None:
        """Alive while this loop turns; ready while a stream to some node is open."""
        while True:
            self.probes.beat()
            links = self.discovery.links if self.discovery is not None else {}
            if any(link.stream is not None for link in links.values()):
                self.probes.ready()
            elif self._stopping is not None:
                self.probes.not_ready("stopping: draining its runs")
            else:
                self.probes.not_ready(f"no stream open to a node ({len(links)} known)")
            await asyncio.sleep(_PROBE_TICK_S)

    async def _start(self) -> None:
        config = self.config
        context = {"executor": config.executor_id, "cluster": config.cluster}
        for task in self.registry:
            if task.pool not in config.pools:
                log.warning(
                    "executor.task_pool_not_served",
                    extra={**context, "task": task.name, "pool": task.pool},
                )
        if config.nodes:  # the nodes say where they are: no etcd here at all
            self._view = ClusterFeed(
                config.nodes,
                token=config.token,
                credentials=self._credentials,
                backoff_min_s=config.reconnect_min_s,
                backoff_max_s=config.reconnect_max_s,
            )
        else:
            self._etcd = await Etcd.connect(config.etcd())
            self._view = ClusterView(self._etcd, self.layout)
        try:
            await self._view.start()
        except BaseException:
            await self._view.stop()
            await self._close_etcd()
            raise
        self.router = Router(owner_of=self._view.owner_of)
        self.outbox = Outbox(self.router)
        self.executions = Executions(
            self.registry, config.pools, threads=self._threads, router=self.router,
            outbox=self.outbox, hold=config.hold, backlog_s=config.backlog_s,
            max_ready_wait_s=config.max_ready_wait_s, governor=self._governor,
        )  # fmt: skip
        self._governor.start()
        info = ExecutorInfo(
            executor_id=config.executor_id,
            address="",  # executors serve nothing: nodes never dial them
            pools=self.identity.pools,
            task_types=self.identity.task_types,
            capacity=config.capacity,
        )
        if self._registry is not None:
            self.metrics = ExecutorMetrics(
                self.executions, self.outbox, self.router, registry=self._registry
            )
        if self._etcd is not None:  # listed in etcd; through nodes, the nodes' links list it
            self.registration = Registration(
                self._etcd, self.layout, info, ttl_s=config.session_ttl_s
            )
        self.discovery = Discovery(self._view, self._link)
        discovery = self.discovery
        reach = self.reach = Reach(
            lambda: discovery.links, executor_id=config.executor_id, cluster=config.cluster,
            interval_s=config.reach_check_s,
        )  # fmt: skip
        self._tasks = [
            asyncio.create_task(reach.run(), name="executor reach"),
            asyncio.create_task(self.outbox.run(), name="executor outbox"),
            asyncio.create_task(self.discovery.run(), name="executor discovery"),
        ]
        if self.registration is not None:
            self._tasks.insert(
                1, asyncio.create_task(self.registration.run(), name="executor registration")
            )
        log.info("executor.started", extra={**context, "pools": dict(config.pools),
                                            "tasks": list(self.identity.task_types)})  # fmt: skip

    def _link(self, node_id: str, address: str) -> NodeLink:
        assert self.executions is not None
        return NodeLink(
            node_id, address, self.identity, self.executions,
            backoff_min_s=self.config.reconnect_min_s, backoff_max_s=self.config.reconnect_max_s,
            credentials=self._credentials, token=self.config.token,
        )  # fmt: skip

    async def stop(self) -> None:
        """Drain and leave the cluster; safe to call more than once, and concurrently."""
        if self._stopping is None:
            self._stopping = asyncio.create_task(self._stop(), name="executor stop")
        await asyncio.shield(self._stopping)

    async def _stop(self) -> None:
        config = self.config
        context = {"executor": config.executor_id}
        if self.executions is not None and self.outbox is not None:
            log.info("executor.draining", extra={**context, "held": len(self.executions)})
            await self.executions.drain(config.drain_timeout_s)
            try:
                await asyncio.wait_for(self.outbox.flushed(), config.flush_timeout_s)
            except TimeoutError:
                log.warning("executor.results_unacknowledged",
                            extra={**context, "results": len(self.outbox)})  # fmt: skip
        for task in reversed(self._tasks):  # discovery (streams) first, registration last
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._view is not None:
            await self._view.stop()
        await self._close_etcd()
        self._threads.shutdown()
        self._governor.stop()
        self._close_http()
        log.info("executor.stopped", extra=context)

    async def _close_etcd(self) -> None:
        if self._etcd is not None:
            await self._etcd.close()
            self._etcd = None


async def run_executor(config: ExecutorConfig, registry: TaskRegistry | None = None) -> None:
    """Import the task modules, run the executor, and drain on SIGTERM or SIGINT."""
    registry = default_registry if registry is None else registry
    load_modules(config.task_modules)
    if not len(registry):
        raise ConfigError(
            "task_modules", "no task is registered: name the modules that define them (--tasks)"
        )
    loop = asyncio.get_running_loop()
    received = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, received.set)
    executor = Executor(config, registry)
    starting = asyncio.create_task(executor.start(), name="executor start")
    signalled = asyncio.create_task(received.wait(), name="executor signal")
    try:
        # A signal during start (etcd unreachable: the first listing waits for it) stops too.
        await asyncio.wait({starting, signalled}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done():
            starting.result()
            await signalled
        log.info("executor.signal", extra={"executor": config.executor_id})
    finally:
        for task in (starting, signalled):
            task.cancel()
        await asyncio.wait({starting, signalled})
        await executor.stop()
        for sig in signals:
            loop.remove_signal_handler(sig)
