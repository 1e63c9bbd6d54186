"""`wheel dev`: its configuration, port plan, state file and child processes' setup."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from wheel.dev.config import DevConfig, previous_token, write_state
from wheel.dev.processes import child_environment, metric_value, plan_ports, wheel_command
from wheel.errors import ConfigError

DATA = Path("/var/lib/wheel-dev")


@pytest.mark.parametrize("field", ["etcd_port", "postgres_port", "api_port", "metrics_port"])
@pytest.mark.parametrize("port", [-1, 65536])
def test_out_of_range_port_is_refused(field: str, port: int) -> None:
    with pytest.raises(ConfigError) as caught:
        DevConfig(data_dir=DATA, **{field: port})
    assert caught.value.field == field
    assert str(caught.value) == f"{field}: {port} is not a TCP port (0-65535)"


def test_defaults_pick_ports_and_run_three_nodes_with_the_examples() -> None:
    config = DevConfig(data_dir=DATA)
    assert (config.etcd_port, config.postgres_port) == (0, 0)
    assert (config.api_port, config.metrics_port) == (None, None), "7070.. when free"
    assert (config.nodes, config.examples, config.view) == (3, True, "auto")
    assert config.state_path == DATA / "dev.json"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"nodes": 0}, "nodes"),
        ({"nodes": 17}, "nodes"),
        ({"view": "fancy"}, "view"),
        ({"partitions": 0}, "partitions"),
        ({"task_modules": ("my-tasks",)}, "task_modules"),
    ],
)
def test_invalid_settings_name_their_field(changes: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        DevConfig(data_dir=DATA, **changes)  # type: ignore[arg-type]
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("view", "tty", "table"),
    [("auto", True, True), ("auto", False, False), ("table", False, True), ("lines", True, False)],
)
def test_the_table_is_for_terminals_unless_asked_for(view: str, tty: bool, table: bool) -> None:
    assert DevConfig(data_dir=DATA, view=view).table_view(tty) is table


def _free_except(*busy: int) -> dict[str, object]:
    counter = iter(range(40000, 41000))
    return {"is_free": lambda port: port not in busy, "pick_free": lambda: next(counter)}


def test_the_default_ports_when_they_are_free() -> None:
    ports = plan_ports("api_port", None, 3, default=7070, **_free_except())
    assert ports == ([7070, 7071, 7072], "")


def test_busy_default_ports_give_way_to_free_ones_and_say_so() -> None:
    ports, note = plan_ports("api_port", None, 3, default=7070, **_free_except(7071))
    assert ports == [40000, 40001, 40002]
    assert note == "7070-7072 in use: free ports instead"


def test_ports_taken_by_the_cluster_itself_count_as_busy() -> None:
    ports, note = plan_ports(
        "metrics_port", None, 2, default=9100, taken={9101, 40000}, **_free_except()
    )
    assert ports == [40001, 40002]
    assert note == "9100-9101 in use: free ports instead"


def test_port_zero_means_free_ports_all_different() -> None:
    repeating = iter([5000, 5000, 5001, 5001, 5002])
    ports, note = plan_ports(
        "api_port", 0, 3, default=7070, is_free=lambda _: True, pick_free=lambda: next(repeating)
    )
    assert (ports, note) == ([5000, 5001, 5002], "")


def test_an_asked_for_port_in_use_is_an_error_not_another_port() -> None:
    with pytest.raises(ConfigError) as caught:
        plan_ports("api_port", 8000, 3, default=7070, **_free_except(8002))
    assert str(caught.value) == "api_port: port 8002 is in use (0 picks free ports)"
    assert plan_ports("api_port", 8000, 2, default=7070, **_free_except(8002)) == ([8000, 8001], "")


def test_a_range_past_the_last_port_is_refused() -> None:
    with pytest.raises(ConfigError, match="port 65536 is in use"):
        plan_ports("api_port", 65535, 2, default=7070, **_free_except())


def test_dev_json_is_private_and_its_token_found_again(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text("{}")
    path.chmod(0o644)  # an older run's file
    write_state(path, {"token": "whl_abc", "pid": 1})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert previous_token(path) == "whl_abc"
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("content", [None, "", "not json", "[]", '{"token": 7}', "{}"])
def test_no_usable_token_on_record_is_none(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "dev.json"
    if content is not None:
        path.write_text(content)
    assert previous_token(path) is None


def test_children_get_no_wheel_settings_but_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WHEEL_CLUSTER", "production")
    monkeypatch.setenv("WHEEL_CONFIG", "/etc/wheel.toml")
    monkeypatch.setenv("PATH", "/usr/bin")
    env = child_environment({"WHEEL_POSTGRES_DSN": "postgresql://x"})
    assert "WHEEL_CLUSTER" not in env
    assert "WHEEL_CONFIG" not in env
    assert env["WHEEL_POSTGRES_DSN"] == "postgresql://x"
    assert env["PATH"] == "/usr/bin"
    assert env["PYTHONUNBUFFERED"] == "1"


def test_children_run_this_interpreter_s_wheel() -> None:
    argv = wheel_command("executor", "--executor-id", "x")
    assert argv[1:] == ["-m", "wheel", "executor", "--executor-id", "x"]


def test_an_unlabelled_metric_is_read_from_the_exposition() -> None:
    text = (
        "# HELP wheel_executor_streams Live streams.\n"
        "# TYPE wheel_executor_streams gauge\n"
        "wheel_executor_streams_total 9.0\n"
        "wheel_executor_streams 3.0\n"
    )
    assert metric_value(text, "wheel_executor_streams") == 3.0
    assert metric_value(text, "wheel_executor_credit") is None
