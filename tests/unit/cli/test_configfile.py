"""Configuration precedence: flags, then WHEEL_* environment, then the file, then defaults."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from wheel.cli import scheduler as scheduler_cli
from wheel.scheduler import node as node_module
from wheel.scheduler.config import SchedulerConfig


class RecordingNode:
    """Stands in for the node (the unit under test is the configuration, not the node)."""

    configs: ClassVar[list[SchedulerConfig]] = []

    def __init__(self, config: SchedulerConfig) -> None:
        RecordingNode.configs.append(config)

    async def run(self, stop: Any) -> None:
        stop.close()


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[SchedulerConfig]:
    RecordingNode.configs = []
    monkeypatch.setattr(node_module, "SchedulerNode", RecordingNode)

    def run(main: Coroutine[Any, Any, None]) -> None:
        asyncio.run(main)

    monkeypatch.setattr(scheduler_cli.eventloop, "run", run)
    return RecordingNode.configs


def test_flags_beat_environment_beat_file_beat_defaults(
    tmp_path: Path, recorded: list[SchedulerConfig]
) -> None:
    config = tmp_path / "scheduler.toml"
    config.write_text(
        'node_id = "from-file"\nwindow_s = 120\nlease_s = 40\nheartbeat-interval-s = 4\n'
    )
    result = CliRunner().invoke(
        scheduler_cli.scheduler,
        ["--config", str(config), "--window-s", "90"],
        env={"WHEEL_LEASE_S": "50", "WHEEL_POSTGRES_DSN": "postgresql://x",
             "WHEEL_ETCD_ENDPOINT": "127.0.0.1:2379"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (built,) = recorded
    assert (built.node_id, built.window_s, built.lease_s, built.heartbeat_interval_s) == (
        "from-file", 90.0, 50.0, 4.0,
    )  # fmt: skip
    assert built.claim_batch == 1000, "untouched: the default"


def test_an_unknown_key_is_an_error_naming_it(
    tmp_path: Path, recorded: list[SchedulerConfig]
) -> None:
    config = tmp_path / "scheduler.toml"
    config.write_text("windw_s = 120\n")
    result = CliRunner().invoke(scheduler_cli.scheduler, ["--config", str(config)])
    assert result.exit_code == 2
    assert "config.windw_s" in result.output
    assert recorded == []


def test_a_file_that_is_not_toml_is_an_error(
    tmp_path: Path, recorded: list[SchedulerConfig]
) -> None:
    config = tmp_path / "scheduler.toml"
    config.write_text("window_s = = 3\n")
    result = CliRunner().invoke(scheduler_cli.scheduler, ["--config", str(config)])
    assert result.exit_code == 2
    assert "not valid TOML" in result.output
