"""The node's CORS allow-list for the JSON API: origins only, checked when the config is built,
and written as browsers write the Origin header."""

from __future__ import annotations

import pytest

from wheel.errors import ConfigError
from wheel.scheduler.config import SchedulerConfig


def config(**overrides: str) -> SchedulerConfig:
    return SchedulerConfig(
        node_id="n1", postgres_dsn="postgresql://x", etcd_endpoint="127.0.0.1:2379",
        http_listen="127.0.0.1:0", **overrides,
    )  # fmt: skip


def test_no_origin_is_allowed_by_default() -> None:
    assert config().allowed_origins == ()


def test_origins_are_written_as_browsers_send_them() -> None:
    listed = " HTTPS://Console.Example.com:443 ,http://localhost:5173,, https://b.example/ "
    assert config(cors_origins=listed).allowed_origins == (
        "https://console.example.com", "http://localhost:5173", "https://b.example",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("listed", "why"),
    [
        ("*", "name each origin"),
        ("https://console.example.com/app", "no path"),
        ("https://console.example.com/?x=1", "no path"),
        ("https://user@console.example.com", "no path"),
        ("console.example.com", "not an origin"),
        ("ftp://console.example.com", "not an origin"),
        ("https://ok.example,javascript:alert(1)", "not an origin"),
        ("https://[::1", "not a URL"),
    ],
)
def test_anything_but_an_origin_is_refused_naming_the_field(listed: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why) as raised:
        config(cors_origins=listed)
    assert raised.value.field == "cors_origins"


def test_origins_need_the_http_listener() -> None:
    with pytest.raises(ConfigError, match="set it too") as raised:
        SchedulerConfig(
            node_id="n1", postgres_dsn="postgresql://x", etcd_endpoint="127.0.0.1:2379",
            cors_origins="https://console.example.com",
        )  # fmt: skip
    assert raised.value.field == "cors_origins"
