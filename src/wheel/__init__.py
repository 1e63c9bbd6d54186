"""wheel: a distributed job scheduler.

Users register work to run now, at an instant, or on a cron schedule in a time
zone; scheduler nodes coordinated by etcd fire every occurrence from an
in-memory timing wheel and stream it to executors; Postgres is the source of
truth.

The distribution is `wheel-scheduler`; the import name `wheel` is shared with
PyPA's `wheel` package, so wheel-scheduler always lives in its own virtual
environment. `__distribution__` tells the two apart.

`wheel.task` and `wheel.TaskContext` are imported on first use, so
`import wheel` stays light (no gRPC).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wheel.executor.context import TaskContext
    from wheel.executor.tasks import task

__distribution__ = "wheel-scheduler"
__version__ = "0.1.0"

__all__ = ["TaskContext", "__distribution__", "__version__", "task"]


def __getattr__(name: str) -> object:
    if name == "task":
        from wheel.executor.tasks import task

        return task
    if name == "TaskContext":
        from wheel.executor.context import TaskContext

        return TaskContext
    raise AttributeError(f"module 'wheel' has no attribute {name!r}")
