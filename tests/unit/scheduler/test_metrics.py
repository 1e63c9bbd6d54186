"""A node's Prometheus registry, read from an engine snapshot: what it names each gauge,
and what every wheel process exports beside."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from wheel.scheduler.metrics import NodeMetrics
from wheel.scheduler.observer import EngineSnapshot

SNAPSHOT = EngineSnapshot(
    at_ms=10_000,
    timers=4,
    owned=8,
    in_flight=1,
    links=2,
    ready={"default": 3},
    credit={"default": 5, "reports": 2},
    held_back=0,
    unserved={},
    breakers={},
    oldest_ready_ms=9_000,
    oldest_ready_by_pool={"default": 9_000},
    stalled=None,
    pressure={},
)


def scrape(metrics: NodeMetrics) -> dict[str, float]:
    """Every sample the node's registry exposes, by name{label=value,...}."""
    text = generate_latest(metrics.registry).decode()
    return {
        f"{s.name}{{{','.join(f'{k}={v}' for k, v in sorted(s.labels.items()))}}}": s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def watching(snapshot: EngineSnapshot) -> NodeMetrics:
    metrics = NodeMetrics()
    metrics.watch(lambda: snapshot, dict)
    return metrics


def test_the_credit_a_node_may_dispatch_has_a_name_of_its_own() -> None:
    samples = scrape(watching(SNAPSHOT))
    assert samples["wheel_dispatch_credit{pool=default}"] == 5
    assert samples["wheel_dispatch_credit{pool=reports}"] == 2
    assert samples["wheel_ready{pool=default}"] == 3
    assert not [name for name in samples if name.startswith("wheel_executor_")], (
        "wheel_executor_* are an executor's: summed with a node's they would count twice"
    )


def test_a_node_says_it_is_a_scheduler_and_exports_the_process_metrics() -> None:
    samples = scrape(watching(SNAPSHOT))
    (build,) = [name for name in samples if name.startswith("wheel_build_info{")]
    assert "role=scheduler," in build
    assert samples[build] == 1
    assert samples["process_resident_memory_bytes{}"] > 0
    assert "process_cpu_seconds_total{}" in samples
    assert any(name.startswith("python_info{") for name in samples)


def test_two_nodes_in_one_process_keep_registries_apart() -> None:
    first, second = watching(SNAPSHOT), watching(SNAPSHOT)
    assert scrape(first)["wheel_owned_partitions{}"] == 8
    assert "process_open_fds{}" in scrape(second)


def test_each_lost_node_this_node_records_is_counted() -> None:
    metrics = NodeMetrics()
    metrics.node_lost(object())
    metrics.node_lost(object())
    samples = {
        sample.name: sample.value
        for family in text_string_to_metric_families(generate_latest(metrics.registry).decode())
        for sample in family.samples
    }
    assert samples["wheel_nodes_lost_total"] == 2
