"""The task registry: which handler runs a task type, and in which pool.

    @wheel.task("send_report", pool="slow")
    def send_report(ctx: TaskContext) -> None: ...

A handler is `def h(ctx)` (run on a worker thread) or `async def h(ctx)` (run
on the event loop). Task types are global names: registering one twice is an
error, never a silent replacement. `load_modules` imports the user's task
modules, whose decorators fill the default registry.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from wheel.errors import ConfigError
from wheel.executor.context import TaskContext

DEFAULT_POOL = "default"

SyncHandler = Callable[[TaskContext], object]
AsyncHandler = Callable[[TaskContext], Awaitable[object]]
Handler = SyncHandler | AsyncHandler
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    handler: Handler
    pool: str
    is_async: bool
    """True for `async def` handlers (run on the loop); False ones run on a thread."""


class TaskRegistry:
    """Task types by name."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}

    def register(self, name: str, handler: Handler, *, pool: str = DEFAULT_POOL) -> Task:
        if not name:
            raise ConfigError("task", "a task type needs a non-empty name")
        if not pool:
            raise ConfigError("task", f"task {name!r}: pool must be non-empty")
        if not callable(handler):
            raise ConfigError("task", f"task {name!r}: handler {handler!r} is not callable")
        existing = self._tasks.get(name)
        if existing is not None:
            raise ConfigError(
                "task",
                f"task {name!r} is already registered (by {_where(existing.handler)}); "
                f"cannot register it again (by {_where(handler)})",
            )
        task = Task(name, handler, pool, inspect.iscoroutinefunction(handler))
        self._tasks[name] = task
        return task

    def task(self, name: str, *, pool: str = DEFAULT_POOL) -> Callable[[H], H]:
        """Decorator: register the function as the handler of `name`; it is returned unchanged."""

        def decorate(handler: H) -> H:
            self.register(name, handler, pool=pool)
            return handler

        return decorate

    def get(self, name: str) -> Task | None:
        return self._tasks.get(name)

    def names(self) -> list[str]:
        return sorted(self._tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(sorted(self._tasks.values(), key=lambda t: t.name))


def _where(handler: object) -> str:
    module = getattr(handler, "__module__", "?")
    name = getattr(handler, "__qualname__", repr(handler))
    return f"{module}.{name}"


default_registry = TaskRegistry()
"""The registry `wheel.task` fills and `wheel executor` runs."""


def task(name: str, *, pool: str = DEFAULT_POOL) -> Callable[[H], H]:
    """Register a handler in the default registry: `@wheel.task("send_report")`."""
    return default_registry.task(name, pool=pool)


def load_modules(modules: Iterable[str]) -> None:
    """Import the user's task modules (their `@wheel.task` decorators register the tasks)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ConfigError:
            raise  # a registration error from inside the module already says what is wrong
        except Exception as exc:
            raise ConfigError(
                "tasks", f"cannot import task module {module!r}: {type(exc).__name__}: {exc}"
            ) from exc
