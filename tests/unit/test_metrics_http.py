"""The plain-HTTP port: /livez and /readyz answer with the probes' reasons; everything
else is the Prometheus exposition."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter

from tests.probes import probe
from wheel import metrics_http
from wheel.metrics_http import HttpEndpoint
from wheel.probes import Probes


class _Clock:
    now = 50.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def served() -> Iterator[tuple[HttpEndpoint, Probes, _Clock]]:
    registry = CollectorRegistry()
    Counter("wheel_test_things", "Things.", registry=registry).inc(3)
    clock = _Clock()
    probes = Probes(stall_after_s=10.0, clock=clock)
    endpoint = metrics_http.serve(registry, "127.0.0.1:0", probes)
    try:
        yield endpoint, probes, clock
    finally:
        endpoint.close()


def test_probes_answer_with_their_reasons(served: tuple[HttpEndpoint, Probes, _Clock]) -> None:
    endpoint, probes, clock = served
    assert probe(endpoint.address, "/livez") == (200, "ok\n")
    assert probe(endpoint.address, "/readyz") == (503, "starting\n")
    probes.ready()
    assert probe(endpoint.address, "/readyz") == (200, "ok\n")
    clock.now += 11.0
    assert probe(endpoint.address, "/livez") == (503, "the event loop has not run for 11 s\n")


def test_metrics_are_served_beside_them(served: tuple[HttpEndpoint, Probes, _Clock]) -> None:
    endpoint, _, _ = served
    code, text = probe(endpoint.address, "/metrics")
    assert code == 200
    assert "wheel_test_things_total 3.0" in text


def test_without_probes_those_paths_are_metrics_as_before() -> None:
    registry = CollectorRegistry()
    endpoint = metrics_http.serve(registry, "127.0.0.1:0")
    try:
        code, _ = probe(endpoint.address, "/readyz")
        assert code == 200
    finally:
        endpoint.close()


def test_closing_frees_the_port(served: tuple[HttpEndpoint, Probes, _Clock]) -> None:
    endpoint, _, _ = served
    endpoint.close()
    assert probe(endpoint.address, "/livez")[0] == 0
