"""The metrics every wheel process exports beside its own: which build it runs, and the
standard process and interpreter metrics a Prometheus client's default registry has.

    wheel_build_info{role,version,python_version}  gauge  always 1
    process_*      CPU seconds, resident and virtual memory, open and maximum file
                   descriptors, start time (prometheus_client's ProcessCollector;
                   read from /proc, so Linux only)
    python_info    the interpreter (PlatformCollector)
    python_gc_*    the garbage collector's runs and objects (GCCollector)

`wheel_build_info` is shaped like Go exporters' `prometheus_build_info` and
`node_exporter_build_info` (a gauge of 1 whose labels name the build: `version`, and the
runtime's, here `python_version` for their `goversion`), with `role`, "scheduler" or
"executor", saying which of wheel's processes it is. It is what the alert rules find
wheel's processes by, whatever the scrape job is called:
`count(wheel_build_info{role="scheduler"})` is the number of nodes whose last scrape
succeeded (a failed scrape drops a target's series at once).

Nodes and executors each keep a registry of their own (several in one process do not
collide), and each registers these in it: `register(registry, "executor")`.
"""

from __future__ import annotations

import platform
from typing import Literal

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    Info,
    PlatformCollector,
    ProcessCollector,
)

from wheel._version import __version__

Role = Literal["scheduler", "executor"]


def build_labels(role: Role) -> dict[str, str]:
    """The labels of `wheel_build_info` in this process."""
    return {"role": role, "version": __version__, "python_version": platform.python_version()}


def register(registry: CollectorRegistry, role: Role) -> None:
    """Add `wheel_build_info` and the standard process_*/python_* collectors to `registry`."""
    Info("wheel_build", "Which wheel this is: always 1.", registry=registry).info(
        build_labels(role)
    )
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
