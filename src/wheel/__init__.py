"""wheel: a distributed job scheduler.

Users register work to run now, at an instant, or on a cron schedule in a time
zone; scheduler nodes coordinated by etcd fire every occurrence from an
in-memory timing wheel and stream it to executors; Postgres is the source of
truth.

    import wheel

    with wheel.Client("127.0.0.1:7070", token="whl_...") as client:
        client.create_job("nightly", "reports.nightly", wheel.cron("30 1 * * *", "Europe/London"),
                          policies=wheel.Policies(max_attempts=5))

The distribution is `wheel-scheduler`; the import name `wheel` is shared with
PyPA's `wheel` package, so wheel-scheduler always lives in its own virtual
environment. `__distribution__` tells the two apart.

The public names below are imported on first use, so `import wheel` stays
light (no gRPC): the SDK (`Client`, `AsyncClient`, `now`, `at`, `cron`,
`Policies`, `MisfirePolicy`, `OverlapPolicy`, `NewJob`, `HttpTask`; results in
`wheel.client.types`,
errors in `wheel.errors`) and the executor's `task` and `TaskContext`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from wheel._version import __distribution__, __version__

if TYPE_CHECKING:
    from wheel.client.aio import AsyncClient
    from wheel.client.schedules import at, cron, every, now
    from wheel.client.sync import Client
    from wheel.client.types import NewJob
    from wheel.executor.context import TaskContext
    from wheel.executor.tasks import task
    from wheel.model.http_tasks import HttpTask
    from wheel.model.jobs import MisfirePolicy, OverlapPolicy, Policies

_LAZY = {
    "AsyncClient": "wheel.client.aio",
    "Client": "wheel.client.sync",
    "HttpTask": "wheel.model.http_tasks",
    "MisfirePolicy": "wheel.model.jobs",
    "NewJob": "wheel.client.types",
    "OverlapPolicy": "wheel.model.jobs",
    "Policies": "wheel.model.jobs",
    "TaskContext": "wheel.executor.context",
    "at": "wheel.client.schedules",
    "cron": "wheel.client.schedules",
    "every": "wheel.client.schedules",
    "now": "wheel.client.schedules",
    "task": "wheel.executor.tasks",
}

__all__ = [
    "AsyncClient",
    "Client",
    "HttpTask",
    "MisfirePolicy",
    "NewJob",
    "OverlapPolicy",
    "Policies",
    "TaskContext",
    "__distribution__",
    "__version__",
    "at",
    "cron",
    "every",
    "now",
    "task",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'wheel' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
