"""The task registry: names are unique, handlers keep their kind, modules load or say why not."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import wheel
from wheel.errors import ConfigError
from wheel.executor.context import TaskContext
from wheel.executor.tasks import DEFAULT_POOL, TaskRegistry, default_registry, load_modules


def test_the_decorator_registers_and_returns_the_handler_unchanged() -> None:
    registry = TaskRegistry()

    @registry.task("send_report", pool="slow")
    def send_report(ctx: TaskContext) -> str:
        return "sent"

    @registry.task("ping")
    async def ping(ctx: TaskContext) -> None:
        return None

    report = registry.get("send_report")
    assert report is not None
    assert (report.handler, report.pool, report.is_async) == (send_report, "slow", False)
    pinged = registry.get("ping")
    assert pinged is not None
    assert (pinged.pool, pinged.is_async) == (DEFAULT_POOL, True)
    assert registry.names() == ["ping", "send_report"]
    assert registry.get("nope") is None


def test_registering_a_name_twice_is_an_error_naming_the_task() -> None:
    registry = TaskRegistry()
    registry.register("send_report", lambda ctx: None)
    with pytest.raises(ConfigError, match="'send_report' is already registered") as raised:
        registry.register("send_report", lambda ctx: None, pool="slow")
    assert raised.value.field == "task"
    assert len(registry) == 1


@pytest.mark.parametrize(
    ("name", "pool", "handler", "message"),
    [
        ("", "default", print, "non-empty name"),
        ("x", "", print, "pool must be non-empty"),
        ("x", "default", "not a function", "not callable"),
    ],
)
def test_invalid_registrations_are_refused(
    name: str, pool: str, handler: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        TaskRegistry().register(name, handler, pool=pool)  # type: ignore[arg-type]


def test_load_modules_imports_the_tasks_into_the_default_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"tasks_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(f"""
            import wheel

            @wheel.task("{name}.hello")
            def hello(ctx):
                return None
        """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(default_registry, "_tasks", {})  # restored after the test
    monkeypatch.delitem(sys.modules, name, raising=False)
    load_modules([name])
    registered = default_registry.get(f"{name}.hello")
    assert registered is not None
    assert registered.handler.__module__ == name


def test_a_module_that_fails_to_import_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_tasks_module.py").write_text("raise RuntimeError('boom at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"'broken_tasks_module'.*RuntimeError: boom at import"):
        load_modules(["broken_tasks_module"])
    with pytest.raises(ConfigError, match=r"'no_such_tasks_module'.*ModuleNotFoundError"):
        load_modules(["no_such_tasks_module"])


def test_wheel_exports_task_and_context_without_importing_grpc() -> None:
    assert wheel.TaskContext is TaskContext
    assert callable(wheel.task)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = wheel.nope  # type: ignore[attr-defined]
    probe = (
        "import sys, wheel\n"
        "wheel.task, wheel.TaskContext\n"
        "assert 'wheel.executor.tasks' in sys.modules\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'google')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
