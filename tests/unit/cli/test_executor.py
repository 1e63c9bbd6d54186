"""`wheel executor` on its own: flags become a config, SIGTERM drains and exits 0."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from wheel.cli.executor import executor
from wheel.executor.config import ExecutorConfig
from wheel.executor.tasks import default_registry

UNREACHABLE = "http://127.0.0.1:1"


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process runs must not reconfigure this process's logging, path or registry."""
    monkeypatch.setattr("wheel.cli.executor.logs.configure", lambda level: None)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(default_registry, "_tasks", {})


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize("pool", ["default", "default=", "=4", "default=x"])
def test_a_malformed_pool_is_a_usage_error(pool: str) -> None:
    result = CliRunner().invoke(executor, ["--etcd", UNREACHABLE, "--pool", pool])
    assert result.exit_code == 2
    assert "NAME=CONCURRENCY" in result.output


@pytest.mark.usefixtures("isolated")
def test_an_invalid_value_names_its_field() -> None:
    result = CliRunner().invoke(executor, ["--etcd", UNREACHABLE, "--pool", "default=0"])
    assert result.exit_code == 1
    assert "pools: pool 'default': concurrency 0" in result.output


@pytest.mark.usefixtures("isolated")
def test_a_task_module_that_cannot_be_imported_is_named() -> None:
    args = ["--etcd", UNREACHABLE, "--tasks", "no_such_tasks_module"]
    result = CliRunner().invoke(executor, args)
    assert result.exit_code == 1
    assert "cannot import task module 'no_such_tasks_module'" in result.output


@pytest.mark.usefixtures("isolated")
def test_no_tasks_at_all_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty_tasks_module.py").write_text("")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(executor, ["--etcd", UNREACHABLE, "--tasks", "empty_tasks_module"])
    assert result.exit_code == 1
    assert "no task is registered" in result.output


@pytest.mark.usefixtures("isolated")
def test_pools_and_drain_timeout_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Kubernetes Deployment sets pools and drain as configuration, not as flags."""
    seen: list[ExecutorConfig] = []

    async def capture(config: ExecutorConfig) -> None:
        seen.append(config)

    monkeypatch.setattr("wheel.executor.executor.run_executor", capture)
    env = {
        "WHEEL_POOLS": "default=64 slow=4",
        "WHEEL_DRAIN_TIMEOUT": "12.5",
        "WHEEL_EXECUTOR_ID": "executor-from-env",
    }
    result = CliRunner().invoke(executor, ["--etcd", UNREACHABLE], env=env)
    assert result.exit_code == 0, result.output
    (config,) = seen
    assert dict(config.pools) == {"default": 64, "slow": 4}
    assert config.drain_timeout_s == 12.5
    assert config.executor_id == "executor-from-env"
