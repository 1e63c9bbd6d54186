"""`wheel dev`'s defaults that meet other tools: its dashboard port, gRPC's fork handlers."""

from __future__ import annotations

import pytest

from wheel.dev.cluster import DEFAULT_API_PORT, DEFAULT_DASHBOARD_PORT, DEFAULT_METRICS_PORT
from wheel.dev.processes import child_environment

# Ports other local development servers take by default.
TAKEN_BY_OTHERS = {
    7233: "Temporal's server",
    8233: "Temporal's web UI (`temporal server start-dev`)",
    8080: "everything",
    8265: "Ray's dashboard",
    8787: "Dask's dashboard",
}


@pytest.mark.parametrize("port", [DEFAULT_DASHBOARD_PORT, DEFAULT_API_PORT, DEFAULT_METRICS_PORT])
def test_default_ports_are_not_another_dev_servers(port: int) -> None:
    assert port not in TAKEN_BY_OTHERS, TAKEN_BY_OTHERS.get(port)


def test_dev_processes_start_with_grpcs_fork_handlers_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRPC_ENABLE_FORK_SUPPORT", raising=False)
    assert child_environment({})["GRPC_ENABLE_FORK_SUPPORT"] == "0"
