"""A scheduler node: membership in the cluster, the gRPC server, and the periodic work.

`SchedulerNode(config).run()` is `wheel scheduler`: it joins the cluster
(etcd), takes its share of partitions and for each one sets the epoch in
Postgres, reaps, materialises and loads it before firing; it serves the
executor stream, and runs the loops that keep the wheel filled (window,
notifications, catch-up), materialise recurring jobs, reap expired leases,
keep the day partitions and send webhooks. Stopping hands every partition
over before the process goes; a process killed outright loses nothing —
the next owner reloads from Postgres.

`start()` builds every part at once into one frozen `_Running`, which the
loops receive: there is no half-started node for them to see.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import timedelta

from grpc_health.v1 import health_pb2

from wheel.cancelling import end
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.membership import Membership
from wheel.coordinator.ownership import partition_count
from wheel.coordinator.session import Session
from wheel.metrics_http import ProbePort
from wheel.model.ids import PartitionId
from wheel.notify.sender import Sender
from wheel.probes import Probes
from wheel.scheduler.clock import measure
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.deadlines import DeadlineSweep
from wheel.scheduler.durability import DurabilityWatch
from wheel.scheduler.engine import Engine
from wheel.scheduler.http_runner import HttpRunner
from wheel.scheduler.links import Links
from wheel.scheduler.loader import Loader
from wheel.scheduler.materialiser import Materialiser, MaterialiseReport
from wheel.scheduler.metrics import NodeMetrics
from wheel.scheduler.notifier import notification_sender
from wheel.scheduler.observer import log_fields
from wheel.scheduler.periodic import every
from wheel.scheduler.publisher import Publisher
from wheel.scheduler.server import Served, serve
from wheel.store import Store, wait_until_migrated

log = logging.getLogger(__name__)


_PARTITION_DAYS_AHEAD = 2
_MAINTAIN_INTERVAL_S = 600.0
_STATS_INTERVAL_S = 10.0
_BREAKERS_INTERVAL_S = 1.0
_HEALTH_INTERVAL_S = 0.5
_PROBE_TICK_S = 0.5
_STOPPING = "stopping: handing its partitions over"


@dataclass(frozen=True, slots=True)
class _Running:
    """Every part of a started node."""

    store: Store
    api_store: Store
    """The API's own connections: a burst of API calls waits for these, never for the ones
    claims and results need."""
    etcd: Etcd
    engine: Engine
    loader: Loader
    materialiser: Materialiser
    served: Served
    publisher: Publisher
    sender: Sender
    metrics: NodeMetrics | None
    durability: DurabilityWatch
    resources: contextlib.AsyncExitStack
    """Closes the stores, etcd and the server, in reverse order."""
    deadlines: DeadlineSweep
    """Marks missed deadlines and announces failure streaks of the owned partitions."""


class SchedulerNode:
    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        self.clock_offset_ms: float | None = None
        self.clock_fit = asyncio.Event()
        """Set while the clock offset is within bounds: only then does the node take partitions."""
        self.ready = asyncio.Event()
        """Set once the node has joined and loaded the partitions it was given first."""
        self.membership: Membership | None = None
        """The current membership (None while the clock is unfit)."""
        self._running: _Running | None = None
        self.metrics_address = ""
        """Where /metrics and the dashboard are served ("" when they are not)."""
        self.dashboard_address = ""
        self._tasks: list[asyncio.Task[None]] = []
        self._membership_task: asyncio.Task[None] | None = None
        self._health_status: int | None = None
        self.not_serving_reason: str | None = "starting"
        """Why readiness fails now (None while the node serves)."""
        self.probes = Probes()
        """What /livez and /readyz answer, from before the node waits for anything."""
        self._early_metrics: NodeMetrics | None = None
        self._http: ProbePort | None = None
        self._stopping = False
        self._layout = Layout(config.cluster)

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def _parts(self) -> _Running:
        if self._running is None:
            raise RuntimeError("the node is not started")
        return self._running

    @property
    def store(self) -> Store:
        return self._parts.store

    @property
    def engine(self) -> Engine:
        """The node's engine (once started)."""
        return self._parts.engine

    @property
    def address(self) -> str:
        """Where executors and clients reach this node (once started)."""
        return self._parts.served.address

    @property
    def metrics(self) -> NodeMetrics | None:
        return self._parts.metrics

    async def start(self) -> None:
        """Serve the probes at once (alive, not ready, saying why), then wait for the schema,
        etcd and Postgres, build every part, and start the loops."""
        self._open_http()
        try:
            await self._start()
        except BaseException:
            self._close_http()
            raise

    def _open_http(self) -> None:
        listen = self.config.metrics_listen
        if not listen:
            return
        self._early_metrics = NodeMetrics()
        self._http = ProbePort.open(self._early_metrics.registry, listen, self.probes)
        self.metrics_address = self._http.endpoint.address

    def _close_http(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    async def _start(self) -> None:
        config = self.config
        probes = self.probes
        probes.not_ready("waiting for the database schema")
        # beside the migration Job: wait
        await wait_until_migrated(config.postgres_dsn, waiting=probes.not_ready)
        probes.not_ready("connecting to Postgres and etcd")
        async with contextlib.AsyncExitStack() as resources:
            store = await Store.open(config.postgres_dsn, min_size=2, max_size=config.pool_size)
            resources.push_async_callback(store.close)
            api_store = await Store.open(
                config.postgres_dsn, min_size=1, max_size=config.api_pool_size, name="wheel-api"
            )
            resources.push_async_callback(api_store.close)
            beats = await Store.open(
                config.postgres_dsn, min_size=1, max_size=1, name="wheel-heartbeats"
            )
            resources.push_async_callback(beats.close)
            etcd = await Etcd.connect(config.etcd())
            resources.push_async_callback(etcd.close)
            partitions = await partition_count(etcd, self._layout, config.partitions)
            metrics = self._early_metrics
            probes.not_ready("checking that Postgres commits on a synchronous standby")
            durability = DurabilityWatch(
                store.durability, node_id=config.node_id,
                report=None if metrics is None else metrics.synchronous_standby,
            )  # fmt: skip
            if config.require_synchronous_standby:
                await durability.require()
            else:
                await durability.check()
            engine = Engine(config, store, Links(), observer=metrics, heartbeats=beats)
            served = await serve(
                config, engine=engine, api_store=api_store, etcd=etcd, layout=self._layout,
                partitions=partitions,
            )  # fmt: skip
            resources.push_async_callback(served.close)
            await resources.enter_async_context(HttpRunner(engine, store.webhooks, config))
            self.dashboard_address = served.dashboard_address
            if metrics is not None:
                metrics.watch(engine.snapshot, engine.upcoming)
            running = self._running = _Running(
                store=store,
                api_store=api_store,
                etcd=etcd,
                engine=engine,
                loader=Loader(engine, store, dsn=config.postgres_dsn),
                materialiser=Materialiser(
                    store, horizon=timedelta(seconds=config.horizon_s), clock=engine.now
                ),
                served=served,
                publisher=Publisher(etcd, self._layout, config.node_id),
                sender=await resources.enter_async_context(
                    notification_sender(config, store, metrics)
                ),
                metrics=metrics,
                durability=durability,
                resources=resources.pop_all(),
                deadlines=DeadlineSweep(
                    store.deadlines, owned=engine.owned, metrics=metrics, node_id=config.node_id
                ),
            )
        engine.start()
        try:
            await self._refresh_health()
            await self._check_clock()
        except BaseException:  # the store went away meanwhile: leave nothing open
            self._running = None
            await engine.stop()
            await running.resources.aclose()
            raise
        loader = running.loader
        self._tasks = [
            asyncio.create_task(loader.listen(), name="listen"),
            every("window", config.load_interval_s, loader.tick),
            every("catch-up", config.catch_up_interval_s, self._catch_up),
            every("reaper", config.reap_interval_s, self._reap),
            every("deadlines", config.reap_interval_s, running.deadlines.run),
            every("materialiser", config.materialise_interval_s, self._materialise),
            every("retention", _MAINTAIN_INTERVAL_S, self._maintain),
            every("notifications", config.notify_poll_s, self._notify),
            every("clock", config.clock_check_interval_s, self._check_clock),
            every("durability", config.durability_check_interval_s, running.durability.check),
            every("stats", _STATS_INTERVAL_S, self._log_stats),
            every("breakers", _BREAKERS_INTERVAL_S, self._publish_breakers),
            every("links", _BREAKERS_INTERVAL_S, self._publish_links),
            every("health", _HEALTH_INTERVAL_S, self._refresh_health),
            every("probes", _PROBE_TICK_S, self._probe),
            asyncio.create_task(self._membership_while_fit(), name="membership"),
        ]
        log.info("node.started", extra={"node": self.node_id, "address": self.address})

    async def stop(self) -> None:
        """Hand every partition over, record what has arrived, close."""
        log.info("node.stopping", extra={"node": self.node_id})
        self._stopping = True
        await self._refresh_health()  # NOT_SERVING, on gRPC and /readyz, while it hands over
        for task in self._tasks:
            if task.get_name() == "membership":  # its hand-over is not cut short
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self._leave()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            await end(task)  # the periodic loops: a cancellation psycopg_pool lost is repeated
        running = self._running
        if running is not None:
            await running.engine.stop()
            running.engine.links.close_all()
            await running.resources.aclose()
        self._close_http()
        log.info("node.stopped", extra={"node": self.node_id})

    async def run(self, stop: Awaitable[object]) -> None:
        await self.start()
        try:
            await stop
        finally:
            await self.stop()

    def serving(self) -> bool:
        """A member with its partitions loaded, reconciling ownership, on a sane clock, and
        dispatching what it can."""
        return self.why_not_serving() is None

    def why_not_serving(self) -> str | None:
        """What keeps the node from serving now, or None while it serves."""
        if self._stopping:
            return _STOPPING
        membership = self.membership
        ownership = membership.ownership if membership is not None else None
        if not self.clock_fit.is_set():
            return f"the clock is not within {self.config.max_clock_offset_ms} ms of the database's"
        if membership is None:
            return "not a member of the cluster (etcd)"
        if not membership.joined.is_set():
            return f"joining the cluster (etcd): {membership.joining}"
        if ownership is None or not ownership.healthy:
            return "partition ownership cannot be reconciled (etcd)"
        if not self.ready.is_set():
            return "loading the partitions it was given"
        if self._running is not None:
            return self._running.engine.stalled()
        return None

    async def _refresh_health(self) -> None:
        """SERVING while `serving()`: what a readiness probe asks. A change is logged, with
        the reason."""
        if self._running is None:
            return
        reason, before = self.why_not_serving(), self.not_serving_reason
        self.not_serving_reason = reason
        if _topic(reason) != _topic(before):  # its figures change every tick: not logged
            if reason is None:
                log.info("node.serving", extra={"node": self.node_id})
            elif reason.startswith("dispatch stalled"):
                log.error("node.not_serving", extra={"node": self.node_id, "reason": reason})
            else:
                log.info("node.not_serving", extra={"node": self.node_id, "reason": reason})
        if reason is None:
            self.probes.ready()
        else:
            self.probes.not_ready(reason)
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if reason is None
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        if status != self._health_status:
            self._health_status = status
            await self._running.served.health.set("", status)

    # -- membership ------------------------------------------------------------------------

    async def _membership_while_fit(self) -> None:
        """Be a member while the clock is fit; leave (handing over) while it is not."""
        while True:
            await self.clock_fit.wait()
            membership = self.membership = Membership(
                self._parts.etcd,
                self._layout,
                self.node_id,
                ttl_s=self.config.session_ttl_s,
                on_acquired=self._acquired,
                on_released=self._released,
                address=self.address,
                default_partitions=self.config.partitions,
                on_lost=None if self.metrics is None else self.metrics.node_lost,
            )
            task = self._membership_task = asyncio.create_task(membership.run())
            self._spawn_ready_watch(membership)
            try:
                await self._wait_unfit(task)
            finally:
                await self._leave()
            await asyncio.sleep(0.1)  # membership failed outright: do not spin

    async def _wait_unfit(self, membership: asyncio.Task[None]) -> None:
        while self.clock_fit.is_set():
            done, _ = await asyncio.wait({membership}, timeout=1.0)
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
        await self._parts.publisher.breakers(self._parts.engine, self._session())

    async def _publish_links(self) -> None:
        parts = self._parts
        await parts.publisher.links(parts.engine, self._session(), parts.durability.problem)

    def _session(self) -> Session | None:
        return self.membership.session if self.membership is not None else None

    async def _acquired(self, partition: PartitionId, epoch: int) -> bool:
        parts = self._parts
        if not self.clock_fit.is_set():
            return False
        accepted = await parts.store.occurrences.set_epochs(
            {partition: epoch}, node_id=self.node_id
        )
        if partition not in accepted:
            log.warning("node.stale_epoch", extra={"partition": partition, "epoch": epoch})
            return False
        # Until it is loaded (the misfire rule first), the catch-up and notifications
        # leave it alone: loaded by them, a run missed meanwhile would be claimed late.
        parts.loader.acquiring.add(partition)
        parts.engine.own(partition, epoch)
        try:
            await parts.engine.reap()
            self._count_skips(await parts.materialiser.run([partition]))
            loaded = await parts.loader.load_partition(partition)
        except BaseException:
            parts.engine.release(partition)
            raise
        finally:
            parts.loader.acquiring.discard(partition)
        log.info(
            "node.partition_acquired",
            extra={"node": self.node_id, "partition": partition, "epoch": epoch, "loaded": loaded},
        )
        return True

    async def _released(self, partition: PartitionId) -> None:
        self._parts.engine.release(partition)
        log.info("node.partition_released", extra={"node": self.node_id, "partition": partition})

    # -- periodic work ---------------------------------------------------------------------

    async def _catch_up(self) -> None:
        await self._parts.loader.catch_up()
        self._parts.engine.retry_blocked()

    async def _reap(self) -> None:
        await self._parts.engine.reap()
        self._parts.engine.sweep()

    async def _probe(self) -> None:
        self._parts.engine.probe()

    async def _materialise(self) -> None:
        parts = self._parts
        if parts.engine.owned:
            owned = list(parts.engine.owned)
            self._count_skips(await parts.materialiser.run(owned))
            if parts.metrics is not None:
                lag = await parts.materialiser.horizon_lag(owned)
                parts.metrics.horizon_lag_s = lag.total_seconds()

    def _count_skips(self, report: MaterialiseReport) -> None:
        for reason, count in (("misfire", report.skipped), ("superseded", report.superseded)):
            self._parts.engine.note_skipped(reason, count)

    async def _maintain(self) -> None:
        store, now, days = self._parts.store, self._parts.engine.now(), self.config.retention_days
        report = await store.time_partitions.maintain(
            now, ahead_days=_PARTITION_DAYS_AHEAD, retention_days=days
        )
        pruned = await store.outbox.prune(now - timedelta(days=days))
        log.info("node.retention", extra={"report": repr(report), "notifications": pruned})

    async def _notify(self) -> None:
        if self.clock_fit.is_set():  # receivers check the signature's timestamp
            await self._parts.sender.send_due()

    async def _log_stats(self) -> None:
        fields = log_fields(self._parts.engine.stats, self._parts.engine.snapshot())
        extra = {"node": self.node_id, **fields, "clock_offset_ms": self.clock_offset_ms}
        log.info("node.stats", extra=extra)

    async def _check_clock(self) -> None:
        parts = self._parts
        reading = await measure(parts.store)
        self.clock_offset_ms = reading.offset_ms
        if parts.metrics is not None:
            parts.metrics.clock_offset_s = reading.offset_ms / 1000
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


def _topic(reason: str | None) -> str | None:
    """What a reason is about, without its figures (what comes before its first colon)."""
    return None if reason is None else reason.partition(":")[0]
