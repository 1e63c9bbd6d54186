"""Prometheus metrics of an executor, read from its state at scrape time.

wheel_executor_executions_total{outcome}  counter  handlers run to a report, by outcome
wheel_executor_in_flight{phase}           gauge    held dispatches: waiting for their
                                                   instant or a slot, or running
wheel_executor_credit{node,pool}          gauge    credit granted to a node and not used
                                                   (the node's own view, summed over its
                                                   executors: wheel_dispatch_credit)
wheel_executor_results_unacknowledged     gauge    results kept until a node records them
wheel_executor_streams                    gauge    live streams (one per scheduler node)

and what every wheel process exports (`wheel.process_metrics`): wheel_build_info{role=
"executor"}, process_*, python_info, python_gc_*.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from wheel import process_metrics
from wheel.executor.executions import Executions
from wheel.executor.outbox import Outbox
from wheel.executor.routing import Router


def executor_registry() -> CollectorRegistry:
    """An executor's registry, holding the process's standard metrics from the start."""
    registry = CollectorRegistry(auto_describe=True)
    process_metrics.register(registry, "executor")
    return registry


class ExecutorMetrics(Collector):
    def __init__(
        self,
        executions: Executions,
        outbox: Outbox,
        router: Router,
        registry: CollectorRegistry | None = None,
    ) -> None:
        """Report into `registry` (one of its own when None): the executor serves its
        registry before these parts exist."""
        self._executions = executions
        self._outbox = outbox
        self._router = router
        self.registry = executor_registry() if registry is None else registry
        self.registry.register(self)

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        finished = CounterMetricFamily(
            "wheel_executor_executions", "Handlers run to a report, by outcome.",
            labels=["outcome"],
        )  # fmt: skip
        for outcome, count in sorted(self._executions.finished.items()):
            finished.add_metric([outcome], count)
        yield finished
        in_flight = GaugeMetricFamily("wheel_executor_in_flight", "Held dispatches by phase.",
                                      labels=["phase"])  # fmt: skip
        for phase, count in sorted(self._executions.phases().items()):
            in_flight.add_metric([phase], count)
        yield in_flight
        credit = GaugeMetricFamily("wheel_executor_credit", "Credit granted and not used.",
                                   labels=["node", "pool"])  # fmt: skip
        streams = self._router.live()
        for stream in streams:
            for pool, count in sorted(stream.credit.items()):
                credit.add_metric([stream.node_id, pool], count)
        yield credit
        unacknowledged = len(self._outbox)
        yield GaugeMetricFamily(
            "wheel_executor_results_unacknowledged", "Results kept until recorded.",
            value=unacknowledged,
        )  # fmt: skip
        yield GaugeMetricFamily("wheel_executor_streams", "Live streams.", value=len(streams))
