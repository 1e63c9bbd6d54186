"""Prometheus metrics of a scheduler node, served over HTTP when `metrics_listen` is set.

Each node has a registry of its own (nodes in one process do not collide).
Events are counted where they happen (`NodeMetrics` is the engine's
observer); state (wheel size, partitions, backlog, upcoming load) is read
from an engine snapshot at scrape time, so nothing is kept twice.

    wheel_firing_lateness_seconds     histogram  dispatch time minus its fire_at (0 when ahead)
    wheel_executions_total{outcome}   counter    attempts recorded, by outcome
    wheel_refused_reports_total{kind,reason}  counter  results/heartbeats refused
    wheel_executions_skipped_total{reason}    counter  runs skipped: overlap, misfire, superseded
    wheel_nodes_lost_total            counter    nodes gone without stopping, as recorded here
    wheel_deadlines_missed_total      counter    runs marked as past their deadline without
                                                 a success, by the node that marked them
    wheel_unserved{task_type}         gauge      due runs no connected executor serves
    wheel_claim_batch_size            histogram  occurrences per claim statement
    wheel_claim_seconds               histogram  claim statement latency
    wheel_record_batch_size           histogram  results per record statement
    wheel_record_seconds              histogram  record statement latency
    wheel_wheel_timers                gauge      occurrences in the timing wheel
    wheel_owned_partitions            gauge
    wheel_ready{pool}                 gauge      fired, waiting for executor credit
    wheel_in_flight                   gauge      claimed and not yet finished
    wheel_dispatch_credit{pool}       gauge      dispatches the executors streaming to this
                                                 node allow it now (an executor's own view,
                                                 per node: wheel_executor_credit)
    wheel_backlog_age_seconds         gauge      oldest due-but-unclaimed occurrence's age
    wheel_ready_oldest_age_seconds{pool}  gauge  the same, by pool (pools with runs ready)
    wheel_executors_held_back         gauge      executors held back after a lapsed lease
    wheel_dispatch_stalled            gauge      1 while ready runs wait although executors
                                                 hold credit and nothing goes (NOT_SERVING)
    wheel_upcoming{pool,within}       gauge      loaded occurrences due within 1 and 5 minutes
                                                 (a pre-scaling signal for executors)
    wheel_horizon_lag_seconds         gauge      how far materialisation trails now
    wheel_clock_offset_seconds        gauge      database clock minus this node's
    wheel_postgres_synchronous_standby gauge     0: no synchronous standby (acked jobs at risk)

and what every wheel process exports (`wheel.process_metrics`): wheel_build_info{role=
"scheduler"}, process_*, python_info, python_gc_*.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client import Counter as CounterMetric
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from wheel import process_metrics
from wheel.model.executions import ExecutionStatus, Outcome
from wheel.scheduler.observer import EngineSnapshot

_LATENESS_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60)
_SIZE_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
_SECONDS_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5)


class NodeMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        process_metrics.register(r, "scheduler")
        self.lateness = Histogram(
            "wheel_firing_lateness_seconds", "Dispatch time minus the run's fire time.",
            buckets=_LATENESS_BUCKETS, registry=r,
        )  # fmt: skip
        self.executions = CounterMetric(
            "wheel_executions", "Attempts recorded, by outcome.", ["outcome"], registry=r
        )
        self.finished = CounterMetric(
            "wheel_executions_finished",
            "Executions that reached a state only a person changes, by status "
            "(succeeded, dead, needs_review): alert on dead.",
            ["status"],
            registry=r,
        )
        self.refused_reports = CounterMetric(
            "wheel_refused_reports",
            "Results and heartbeats refused, by kind and reason (not_yours: from an executor"
            " the run was not dispatched to).",
            ["kind", "reason"],
            registry=r,
        )
        self.skipped_runs = CounterMetric(
            "wheel_executions_skipped",
            "Runs recorded skipped, by reason: overlap (the job's overlap policy), misfire "
            "(missed past its grace while no node owned it) or superseded (made from a "
            "definition since edited).",
            ["reason"],
            registry=r,
        )
        self.notifications = CounterMetric(
            "wheel_notifications",
            "Tries to send a notification, by result: delivered, failed (tried again later)"
            " or gave_up (no more tries, or its URL leads to a denied address).",
            ["result"],
            registry=r,
        )
        self.nodes_lost = CounterMetric(
            "wheel_nodes_lost",
            "Nodes this node recorded lost: gone without stopping (killed, frozen, cut off from"
            " etcd). One node records each loss, so sum over nodes.",
            registry=r,
        )
        self.deadlines_missed = CounterMetric(
            "wheel_deadlines_missed",
            "Runs this node marked as past their job's deadline without a success (each run"
            " is marked once, by one node: sum over nodes).",
            registry=r,
        )
        self.claim_size = Histogram("wheel_claim_batch_size", "Occurrences per claim.",
                                    buckets=_SIZE_BUCKETS, registry=r)  # fmt: skip
        self.claim_seconds = Histogram("wheel_claim_seconds", "Claim statement latency.",
                                       buckets=_SECONDS_BUCKETS, registry=r)  # fmt: skip
        self.record_size = Histogram("wheel_record_batch_size", "Results per record statement.",
                                     buckets=_SIZE_BUCKETS, registry=r)  # fmt: skip
        self.record_seconds = Histogram("wheel_record_seconds", "Record statement latency.",
                                        buckets=_SECONDS_BUCKETS, registry=r)  # fmt: skip
        self.horizon_lag_s = 0.0
        self.clock_offset_s = 0.0
        self.durable = 1.0

    def node_lost(self, departure: object) -> None:
        """A lost node recorded by this node (`coordinator.departures`)."""
        self.nodes_lost.inc()

    def synchronous_standby(self, safe: bool) -> None:
        """A durability reading: whether commits wait for a synchronous standby."""
        self.durable = 1.0 if safe else 0.0

    # -- the engine's observer -------------------------------------------------------------

    def claimed(self, seconds: float, size: int) -> None:
        self.claim_seconds.observe(seconds)
        self.claim_size.observe(size)

    def recorded(self, seconds: float, size: int) -> None:
        self.record_seconds.observe(seconds)
        self.record_size.observe(size)

    def dispatched(self, lateness_s: float) -> None:
        self.lateness.observe(lateness_s)

    def refused(self, kind: str, reason: str, count: int) -> None:
        self.refused_reports.labels(kind, reason).inc(count)

    def attempt_recorded(self, outcome: Outcome) -> None:
        self.executions.labels(outcome.value).inc()

    def execution_finished(self, status: ExecutionStatus) -> None:
        self.finished.labels(status.value).inc()

    def skipped(self, reason: str, count: int) -> None:
        self.skipped_runs.labels(reason).inc(count)

    def notification_tried(self, result: str) -> None:
        self.notifications.labels(result).inc()

    def watch(
        self,
        snapshot: Callable[[], EngineSnapshot],
        upcoming: Callable[[], dict[tuple[str, str], int]],
    ) -> None:
        """Read the engine's state at every scrape."""
        self.registry.register(_EngineCollector(snapshot, upcoming, self))


class _EngineCollector(Collector):
    def __init__(
        self,
        snapshot: Callable[[], EngineSnapshot],
        upcoming: Callable[[], dict[tuple[str, str], int]],
        metrics: NodeMetrics,
    ) -> None:
        self._snapshot = snapshot
        self._upcoming = upcoming
        self._metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = self._snapshot()
        yield _gauge("wheel_wheel_timers", "Occurrences in the timing wheel.", state.timers)
        yield _gauge("wheel_owned_partitions", "Partitions owned.", state.owned)
        yield _gauge("wheel_in_flight", "Claimed and not yet finished.", state.in_flight)
        ready = GaugeMetricFamily("wheel_ready", "Fired, waiting for credit.", labels=["pool"])
        credit = GaugeMetricFamily(
            "wheel_dispatch_credit",
            "Dispatches the executors streaming to this node allow it now, by pool.",
            labels=["pool"],
        )
        for pool, allowed in state.credit.items():
            ready.add_metric([pool], state.ready.get(pool, 0))
            credit.add_metric([pool], allowed)
        yield ready
        yield credit
        unserved = GaugeMetricFamily(
            "wheel_unserved", "Due runs no connected executor serves (left unclaimed).",
            labels=["task_type"],
        )  # fmt: skip
        for task_type, count in state.unserved.items():
            unserved.add_metric([task_type], count)
        yield unserved
        oldest = state.oldest_ready_ms
        age = max(0.0, (state.at_ms - oldest) / 1000) if oldest is not None else 0.0
        yield _gauge("wheel_backlog_age_seconds", "Oldest due-but-unclaimed age.", age)
        by_pool = GaugeMetricFamily(
            "wheel_ready_oldest_age_seconds",
            "How long the oldest run ready in a pool has waited past its instant.",
            labels=["pool"],
        )
        for pool, oldest_ms in state.oldest_ready_by_pool.items():
            by_pool.add_metric([pool], max(0.0, (state.at_ms - oldest_ms) / 1000))
        yield by_pool
        yield _gauge(
            "wheel_executors_held_back",
            "Executors held back: a lease lapsed while they were silent; probed until they answer.",
            state.held_back,
        )
        yield _gauge(
            "wheel_dispatch_stalled",
            "1 while ready runs wait although executors hold credit for them and none is "
            "dispatched (readiness fails, saying why).",
            0 if state.stalled is None else 1,
        )
        upcoming = GaugeMetricFamily(
            "wheel_upcoming", "Loaded occurrences due within a window, by pool.",
            labels=["pool", "within"],
        )  # fmt: skip
        for (pool, within), count in sorted(self._upcoming().items()):
            upcoming.add_metric([pool, within], count)
        yield upcoming
        metrics = self._metrics
        yield _gauge("wheel_horizon_lag_seconds", "Materialisation behind now.",
                     metrics.horizon_lag_s)  # fmt: skip
        yield _gauge("wheel_clock_offset_seconds", "Database clock minus this node's.",
                     metrics.clock_offset_s)  # fmt: skip
        yield _gauge(
            "wheel_postgres_synchronous_standby",
            "1 while Postgres commits wait for a synchronous standby; 0 when an acknowledged "
            "job would be lost with the primary's disk.",
            metrics.durable,
        )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)
