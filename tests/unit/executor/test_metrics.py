"""An executor's Prometheus metrics, scraped over HTTP while it holds and after it ran work."""

from __future__ import annotations

import asyncio
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.unit.executor.fake_node import dispatch
from tests.unit.executor.helpers import Cluster, Gate, registry


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        f"{s.name}{{{','.join(f'{k}={v}' for k, v in sorted(s.labels.items()))}}}": s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_metrics_show_held_work_credit_and_outcomes(cluster: Cluster, gate: Gate) -> None:
    node = await cluster.add_node("n1")
    executor = await cluster.executor(
        registry(gate), pools={"default": 3}, metrics_listen="127.0.0.1:0"
    )
    stream = await node.opened()
    await stream.until(lambda: stream.credit("default") == 3)
    blocked = stream.dispatch(dispatch("block"))
    await gate.next_started()
    held = await asyncio.to_thread(scrape, executor.metrics_port)
    assert held["wheel_executor_in_flight{phase=running}"] == 1
    assert held["wheel_executor_credit{node=n1,pool=default}"] == 2
    assert held["wheel_executor_streams{}"] == 1
    gate.release(blocked.execution_id)
    await stream.result(blocked.execution_id)
    done = await asyncio.to_thread(scrape, executor.metrics_port)
    assert done["wheel_executor_executions_total{outcome=succeeded}"] == 1
    assert done["wheel_executor_results_unacknowledged{}"] == 1, "the fake node has not acked"


async def test_an_executor_says_it_is_one_and_exports_the_process_metrics(
    cluster: Cluster, gate: Gate
) -> None:
    executor = await cluster.executor(registry(gate), metrics_listen="127.0.0.1:0")
    samples = await asyncio.to_thread(scrape, executor.metrics_port)
    (build,) = [name for name in samples if name.startswith("wheel_build_info{")]
    assert "role=executor," in build
    assert samples[build] == 1
    assert samples["process_resident_memory_bytes{}"] > 0
    assert "process_cpu_seconds_total{}" in samples
    assert any(name.startswith("python_info{") for name in samples)
