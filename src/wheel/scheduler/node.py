"""A scheduler node: membership in the cluster, the gRPC server, and the periodic work.

`SchedulerNode(config).run()` is `wheel scheduler`: it joins the cluster
(etcd), takes its share of partitions and for each one sets the epoch in
Postgres, reaps, materialises and loads it before firing; it serves the
executor stream, and runs the loops that keep the wheel filled (window,
notifications, catch-up), materialise recurring jobs, reap expired leases
and keep the day partitions. Stopping hands every partition over before the
process goes; a process killed outright loses nothing — the next owner
reloads from Postgres.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from wheel._proto.wheel.v1 import api_pb2, executor_pb2
from wheel.api.server.auth import Authenticator, ExecutorAuthenticator
from wheel.api.server.cluster import ClusterApi
from wheel.api.server.executions import ExecutionsApi
from wheel.api.server.explain import Explainer
from wheel.api.server.jobs import MAX_REQUEST_BYTES, JobsApi
from wheel.api.server.rpc import add_services
from wheel.api.server.served import ServedView
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout, encode
from wheel.coordinator.membership import Membership
from wheel.coordinator.ownership import partition_count
from wheel.errors import CoordinatorError
from wheel.model.ids import PartitionId
from wheel.scheduler.clock import measure
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.engine import Engine
from wheel.scheduler.links import Links
from wheel.scheduler.loader import Loader
from wheel.scheduler.materialiser import Materialiser
from wheel.scheduler.metrics import NodeMetrics
from wheel.scheduler.stream import ExecutorStreamService
from wheel.store import Store
from wheel.tls import server_credentials

log = logging.getLogger(__name__)


def jitter(seconds: float) -> float:
    """A little randomness so nodes' periodic work does not line up."""
    return seconds * (0.8 + 0.4 * random.random())


_PARTITION_DAYS_AHEAD = 2
_MAINTAIN_INTERVAL_S = 600.0
_LOOP_RETRY_MAX_S = 5.0
_STATS_INTERVAL_S = 10.0
_BREAKERS_INTERVAL_S = 1.0
_HEALTH_INTERVAL_S = 0.5


class SchedulerNode:
    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        self.address = ""
        self.clock_offset_ms: float | None = None
        self.clock_fit = asyncio.Event()
        """Set while the clock offset is within bounds: only then does the node take partitions."""
        self.ready = asyncio.Event()
        """Set once the node has joined and loaded the partitions it was given first."""
        self._store: Store | None = None
        self._api_store: Store | None = None
        self._etcd: Etcd | None = None
        self._server: grpc.aio.Server | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._membership_task: asyncio.Task[None] | None = None
        self.membership: Membership | None = None
        self.engine: Engine | None = None
        self.loader: Loader | None = None
        self._materialiser: Materialiser | None = None
        self.metrics: NodeMetrics | None = None
        self.metrics_address = ""
        self._health: health.aio.HealthServicer | None = None
        self._health_status: int | None = None
        self._published: dict[str, tuple[int, object]] = {}
        self._layout = Layout(config.cluster)

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The node's store (once started)."""
        assert self._store is not None, "the node is not started"
        return self._store

    async def start(self) -> None:
        config = self.config
        store = self._store = await Store.open(
            config.postgres_dsn, min_size=2, max_size=config.pool_size
        )
        # The API's own connections: a burst of API calls waits for these, never
        # for the ones claims and results need.
        api_store = self._api_store = await Store.open(
            config.postgres_dsn, min_size=1, max_size=config.api_pool_size
        )
        etcd = self._etcd = await Etcd.connect(config.etcd_endpoint)
        layout = self._layout
        partitions = await partition_count(etcd, layout, config.partitions)
        links = Links()
        engine = self.engine = Engine(config, store, links)
        self.loader = Loader(engine, store, dsn=config.postgres_dsn)
        self._materialiser = Materialiser(
            store,
            horizon=timedelta(seconds=config.horizon_s),
            clock=lambda: datetime.now(UTC),
        )
        server = self._server = grpc.aio.server(
            options=[
                ("grpc.keepalive_time_ms", 10_000),
                ("grpc.keepalive_timeout_ms", 5_000),
                # Executors ping every 10 s; allow it. (The default, 5 minutes, makes the
                # server answer "too many pings" and close the executor's stream.)
                ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
                ("grpc.http2.max_ping_strikes", 0),  # and never close a stream over pings
                ("grpc.keepalive_permit_without_calls", 1),
                # gRPC sets SO_REUSEPORT by default: a second node on the same --listen
                # would bind silently and share the port. Off, it fails to start instead.
                ("grpc.so_reuseport", 0),
                # A CreateJobs batch may be larger than gRPC's default 4 MiB.
                ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
            ]
        )
        stream = ExecutorStreamService(
            engine,
            self.node_id,
            ExecutorAuthenticator(api_store.tenants, ttl_s=config.token_cache_s),
        )
        server.add_generic_rpc_handlers([stream.handler()])
        # The public API: every call authenticated by its bearer token.
        served = ServedView(etcd, layout)
        api_services = [
            JobsApi(
                api_store,
                partitions=partitions,
                retention_days=config.retention_days,
                served=served,
            ).service(),
            ExecutionsApi(api_store, Explainer(api_store, etcd, layout, served=served)).service(),
            ClusterApi(etcd, layout).service(),
        ]
        add_services(
            server, Authenticator(api_store.tenants, ttl_s=config.token_cache_s), api_services
        )
        # Standard health checking (SERVING only once joined, loaded and with a sane
        # clock: what a readiness probe asks) and reflection (grpcurl, grpc_cli).
        self._health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        reflection.enable_server_reflection(
            [
                executor_pb2.DESCRIPTOR.services_by_name["ExecutorStream"].full_name,
                *(service.full_name for service in api_pb2.DESCRIPTOR.services_by_name.values()),
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                reflection.SERVICE_NAME,
            ],
            server,
        )
        await self._refresh_health()
        if config.tls_cert_file:
            credentials = server_credentials(config.tls_cert_file, config.tls_key_file)
            port = server.add_secure_port(config.listen, credentials)
        else:
            port = server.add_insecure_port(config.listen)
        await server.start()
        host = config.listen.rsplit(":", 1)[0]
        self.address = config.advertise or f"{host}:{port}"
        if config.metrics_listen:
            self.metrics = NodeMetrics()
            self.metrics.watch(engine)
            engine.metrics = self.metrics
            host, port = self.metrics.serve(config.metrics_listen)
            self.metrics_address = f"{host}:{port}"
        engine.start()
        await self._check_clock()
        self._tasks = [
            asyncio.create_task(self.loader.listen(), name="listen"),
            self._every("window", config.load_interval_s, self.loader.tick),
            self._every("catch-up", config.catch_up_interval_s, self._catch_up),
            self._every("reaper", config.reap_interval_s, self._reap),
            self._every("materialiser", config.materialise_interval_s, self._materialise),
            self._every("retention", _MAINTAIN_INTERVAL_S, self._maintain),
            self._every("clock", config.clock_check_interval_s, self._check_clock),
            self._every("stats", _STATS_INTERVAL_S, self._log_stats),
            self._every("breakers", _BREAKERS_INTERVAL_S, self._publish_breakers),
            self._every("links", _BREAKERS_INTERVAL_S, self._publish_links),
            self._every("health", _HEALTH_INTERVAL_S, self._refresh_health),
            asyncio.create_task(self._membership_while_fit(), name="membership"),
        ]
        log.info("node.started", extra={"node": self.node_id, "address": self.address})

    async def stop(self) -> None:
        """Hand every partition over, record what has arrived, close."""
        log.info("node.stopping", extra={"node": self.node_id})
        for task in self._tasks:
            if task.get_name() == "membership":
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self._leave()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.engine is not None:
            await self.engine.stop()
            self.engine.links.close_all()
        if self._server is not None:
            await self._server.stop(grace=1.0)
        if self._etcd is not None:
            await self._etcd.close()
        if self._store is not None:
            await self._store.close()
        if self._api_store is not None:
            await self._api_store.close()
        log.info("node.stopped", extra={"node": self.node_id})

    async def run(self, stop: Awaitable[object]) -> None:
        await self.start()
        try:
            await stop
        finally:
            await self.stop()

    def serving(self) -> bool:
        """A member with its partitions loaded, reconciling ownership, on a sane clock."""
        membership = self.membership
        ownership = membership.ownership if membership is not None else None
        return (
            self.ready.is_set()
            and self.clock_fit.is_set()
            and membership is not None
            and membership.joined.is_set()
            and ownership is not None
            and ownership.healthy
        )

    async def _refresh_health(self) -> None:
        """SERVING while `serving()`: what a readiness probe asks."""
        if self._health is None:
            return
        serving = self.serving()
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else (health_pb2.HealthCheckResponse.NOT_SERVING)
        )
        if status != self._health_status:
            self._health_status = status
            await self._health.set("", status)

    # -- membership ------------------------------------------------------------------------

    async def _membership_while_fit(self) -> None:
        """Be a member while the clock is fit; leave (handing over) while it is not."""
        while True:
            await self.clock_fit.wait()
            assert self._etcd is not None
            self.membership = Membership(
                self._etcd,
                self._layout,
                self.node_id,
                ttl_s=self.config.session_ttl_s,
                on_acquired=self._acquired,
                on_released=self._released,
                address=self.address,
                default_partitions=self.config.partitions,
            )
            self._membership_task = asyncio.create_task(self.membership.run())
            self._spawn_ready_watch(self.membership)
            try:
                await self._wait_unfit()
            finally:
                await self._leave()
            await asyncio.sleep(0.1)  # membership failed outright: do not spin

    async def _wait_unfit(self) -> None:
        while self.clock_fit.is_set():
            assert self._membership_task is not None
            done, _ = await asyncio.wait({self._membership_task}, timeout=1.0)
            if done:
                return

    async def _leave(self) -> None:
        task, self._membership_task = self._membership_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.ready.clear()
        await self._refresh_health()

    def _spawn_ready_watch(self, membership: Membership) -> None:
        async def watch() -> None:
            await membership.joined.wait()
            ownership = membership.ownership
            if ownership is not None:
                await ownership.settled.wait()
            self.ready.set()
            await self._refresh_health()

        task = asyncio.create_task(watch())
        self._tasks.append(task)

    async def _publish_breakers(self) -> None:
        """Put this node's open breakers in etcd (on its session lease) for `explain`."""
        engine = self.engine
        assert engine is not None
        document = {
            "open": {
                task_type: {"state": state.value, "parked": len(engine.parked.get(task_type, ()))}
                for task_type, state in sorted(engine.breakers.not_closed().items())
            }
        }
        await self._publish(f"{self._layout.breakers}{self.node_id}", document)

    async def _publish_links(self) -> None:
        """Put the executors streaming to this node, and what waits here, in etcd (on its
        session lease): `explain`, job warnings and `wheel executors` read it."""
        engine = self.engine
        assert engine is not None
        executors = {
            link.executor_id: {
                "pools": list(link.pools),
                "task_types": list(link.task_types),
                "capacity": link.capacity,
                "credit": dict(sorted(link.credits.items())),
                "since": link.connected_at.isoformat(timespec="seconds"),
            }
            for link in sorted(engine.links, key=lambda link: link.executor_id)
        }
        unserved: dict[str, int] = {}
        for (_, task_type), items in engine.unserved.items():
            unserved[task_type] = unserved.get(task_type, 0) + len(items)
        document = {
            "executors": executors,
            "ready": {pool: engine.ready.waiting(pool) for pool in sorted(engine.ready.pools())},
            "unserved": dict(sorted(unserved.items())),
        }
        await self._publish(f"{self._layout.links}{self.node_id}", document)

    async def _publish(self, key: str, document: Mapping[str, object]) -> None:
        """Write `document` at `key` under the session's lease when it changed."""
        membership, etcd = self.membership, self._etcd
        session = membership.session if membership is not None else None
        if session is None or etcd is None:
            return
        published = (session.lease_id, document)
        if self._published.get(key) == published:
            return
        try:
            await etcd.put(key, encode(document), lease=session.lease_id)
        except CoordinatorError:
            return  # etcd is away: the next tick tries again
        self._published[key] = published

    async def _acquired(self, partition: PartitionId, epoch: int) -> bool:
        assert self._store is not None
        assert self.engine is not None
        assert self.loader is not None
        if not self.clock_fit.is_set():
            return False
        accepted = await self._store.occurrences.set_epochs(
            {partition: epoch}, node_id=self.node_id
        )
        if partition not in accepted:
            log.warning("node.stale_epoch", extra={"partition": partition, "epoch": epoch})
            return False
        self.engine.own(partition, epoch)
        try:
            await self.engine.reap()
            assert self._materialiser is not None
            await self._materialiser.run([partition])
            loaded = await self.loader.load_partition(partition)
        except BaseException:
            self.engine.release(partition)
            raise
        log.info(
            "node.partition_acquired",
            extra={"node": self.node_id, "partition": partition, "epoch": epoch, "loaded": loaded},
        )
        return True

    async def _released(self, partition: PartitionId) -> None:
        assert self.engine is not None
        self.engine.release(partition)
        log.info("node.partition_released", extra={"node": self.node_id, "partition": partition})

    # -- periodic work ---------------------------------------------------------------------

    def _every(
        self, name: str, interval_s: float, work: Callable[[], Awaitable[object]]
    ) -> asyncio.Task[None]:
        async def loop() -> None:
            failures = 0
            while True:
                try:
                    await work()
                    failures = 0
                    await asyncio.sleep(jitter(interval_s))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the store or etcd away: try again, never give up
                    failures += 1
                    log.warning("node.loop_failed", extra={"loop": name, "error": repr(exc)})
                    await asyncio.sleep(min(interval_s, 0.1 * 2**failures, _LOOP_RETRY_MAX_S))

        return asyncio.create_task(loop(), name=name)

    async def _catch_up(self) -> None:
        assert self.loader is not None
        assert self.engine is not None
        await self.loader.catch_up()
        self.engine.retry_blocked()

    async def _reap(self) -> None:
        assert self.engine is not None
        await self.engine.reap()
        self.engine.sweep()

    async def _materialise(self) -> None:
        assert self._materialiser is not None
        assert self.engine is not None
        if self.engine.owned:
            owned = list(self.engine.owned)
            await self._materialiser.run(owned)
            if self.metrics is not None:
                lag = await self._materialiser.horizon_lag(owned)
                self.metrics.horizon_lag_s = lag.total_seconds()

    async def _maintain(self) -> None:
        assert self._store is not None
        report = await self._store.time_partitions.maintain(
            datetime.now(UTC),
            ahead_days=_PARTITION_DAYS_AHEAD,
            retention_days=self.config.retention_days,
        )
        log.info("node.retention", extra={"report": repr(report)})

    async def _log_stats(self) -> None:
        engine = self.engine
        assert engine is not None
        log.info(
            "node.stats",
            extra={
                "node": self.node_id,
                **dataclasses.asdict(engine.stats),
                "owned": len(engine.owned),
                "wheel": len(engine.driver),
                "ready": len(engine.ready),
                "in_flight": len(engine.in_flight),
                "links": len(engine.links),
                **engine.pressure(),
                "clock_offset_ms": self.clock_offset_ms,
            },
        )

    async def _check_clock(self) -> None:
        assert self._store is not None
        reading = await measure(self._store)
        self.clock_offset_ms = reading.offset_ms
        if self.metrics is not None:
            self.metrics.clock_offset_s = reading.offset_ms / 1000
        if abs(reading.offset_ms) <= self.config.max_clock_offset_ms:
            if not self.clock_fit.is_set():
                log.info("node.clock_fit", extra={"offset_ms": round(reading.offset_ms, 1)})
                self.clock_fit.set()
                await self._refresh_health()
            return
        self.clock_fit.clear()
        await self._refresh_health()
        log.error(
            "node.clock_unfit",
            extra={
                "offset_ms": round(reading.offset_ms, 1),
                "bound_ms": self.config.max_clock_offset_ms,
                "action": "taking no partitions until the clock agrees with the database",
            },
        )
