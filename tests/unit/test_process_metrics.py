"""What every wheel process exports beside its own metrics: its build and the standard
process and interpreter metrics, in a registry of its own."""

from __future__ import annotations

import platform

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import wheel
from wheel import process_metrics


def exposition(registry: CollectorRegistry) -> dict[str, dict[str, float]]:
    """Every family at /metrics: its samples by name{label=value,...}."""
    return {
        family.name: {
            f"{s.name}{{{','.join(f'{k}={v}' for k, v in sorted(s.labels.items()))}}}": s.value
            for s in family.samples
        }
        for family in text_string_to_metric_families(generate_latest(registry).decode())
    }


def test_build_info_names_the_role_the_version_and_the_interpreter() -> None:
    registry = CollectorRegistry(auto_describe=True)
    process_metrics.register(registry, "executor")
    build = exposition(registry)["wheel_build_info"]
    python = platform.python_version()
    assert build == {
        f"wheel_build_info{{python_version={python},role=executor,version={wheel.__version__}}}": 1
    }


def test_the_standard_process_and_python_metrics_are_there() -> None:
    registry = CollectorRegistry(auto_describe=True)
    process_metrics.register(registry, "scheduler")
    families = exposition(registry)
    assert families["process_open_fds"]["process_open_fds{}"] > 0
    assert families["process_resident_memory_bytes"]["process_resident_memory_bytes{}"] > 0
    assert families["process_cpu_seconds"]["process_cpu_seconds_total{}"] > 0
    assert "process_start_time_seconds" in families
    assert families["python_info"] == {
        f"python_info{{implementation={platform.python_implementation()},major="
        f"{platform.python_version_tuple()[0]},minor={platform.python_version_tuple()[1]},"
        f"patchlevel={platform.python_version_tuple()[2]},version={platform.python_version()}}}": 1
    }
    assert "python_gc_collections" in families


def test_two_registries_in_one_process_each_get_their_own() -> None:
    node, executor = CollectorRegistry(auto_describe=True), CollectorRegistry(auto_describe=True)
    process_metrics.register(node, "scheduler")
    process_metrics.register(executor, "executor")
    for registry, role in ((node, "scheduler"), (executor, "executor")):
        families = exposition(registry)
        (build,) = families["wheel_build_info"]
        assert f"role={role}," in build
        assert "process_open_fds" in families
