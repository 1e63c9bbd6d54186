"""Scheduler configuration validation and the due-notification format."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from psycopg import Notify

from wheel.errors import ConfigError
from wheel.model.ids import PartitionId
from wheel.scheduler.config import SchedulerConfig
from wheel.store.notifications import _follow, merge, parse_notification


def config(**overrides: object) -> SchedulerConfig:
    settings: dict[str, object] = {
        "node_id": "n1",
        "postgres_dsn": "postgresql://x",
        "etcd_endpoint": "127.0.0.1:2379",
    }
    settings.update(overrides)
    return SchedulerConfig(**settings)  # type: ignore[arg-type]


def test_the_prefetch_defaults_to_5_s_or_half_the_lease() -> None:
    assert config().prefetch_ms == 5000
    short = config(lease_s=4, heartbeat_interval_s=2)
    assert short.prefetch_ms == 2000, "a held run's lease outlasts its wait"
    assert config(prefetch_ms=800).prefetch_ms == 800
    with pytest.raises(ConfigError) as raised:
        config(lease_s=4, heartbeat_interval_s=2, prefetch_ms=3000)
    assert raised.value.field == "prefetch_ms"


def test_claiming_ahead_stops_at_30_s_or_the_loaded_window() -> None:
    assert config().prefetch_max_ms == 30_000
    assert config(window_s=10).prefetch_max_ms == 10_000, "nothing later is loaded"
    assert config(prefetch_max_ms=8000).prefetch_max_ms == 8000


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"prefetch_max_ms": 4000}, "prefetch_max_ms"),
        ({"window_s": 20, "prefetch_max_ms": 25_000}, "prefetch_max_ms"),
        ({"handover_rate_per_s": 0}, "handover_rate_per_s"),
        ({"node_id": ""}, "node_id"),
        ({"node_id": "a/b"}, "node_id"),
        ({"lease_s": 0}, "lease_s"),
        ({"window_s": 3600}, "window_s"),
        ({"lease_s": 4, "heartbeat_interval_s": 3}, "heartbeat_interval_s"),
        ({"lead_ms": -1}, "lead_ms"),
        ({"horizon_s": 10}, "horizon_s"),
        ({"notify_deny_networks": "169.254.0.0/16,10.0.0.0/33"}, "notify_deny_networks"),
        ({"notify_max_tries": 0}, "notify_max_tries"),
        ({"notify_timeout_s": 0}, "notify_timeout_s"),
    ],
)
def test_bad_settings_name_the_field(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config(**overrides)
    assert raised.value.field == field


def test_the_session_cookie_is_secure_when_browsers_reach_the_dashboard_over_https() -> None:
    assert not config(http_listen="0.0.0.0:8080").secure_cookie, "the node's own plain HTTP"
    behind_tls = config(http_listen="0.0.0.0:8080", http_public_url="https://wheel.example.com")
    assert behind_tls.secure_cookie
    assert config(http_listen=":8080", http_public_url="HTTPS://wheel.example.com/").secure_cookie
    assert not config(http_listen=":8080", http_public_url="http://wheel.lan:8080").secure_cookie


@pytest.mark.parametrize(
    "url",
    ["wheel.example.com", "//wheel.example.com", "ftp://wheel.example.com",
     "https://wheel.example.com/wheel", "https://wheel.example.com/?a=1",
     "https://u@wheel.example.com", "https://wheel.example.com:99999", "https://"],
)  # fmt: skip
def test_the_public_url_is_an_http_origin(url: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config(http_listen="0.0.0.0:8080", http_public_url=url)
    assert raised.value.field == "http_public_url"


def test_a_public_url_without_a_dashboard_is_a_mistake() -> None:
    with pytest.raises(ConfigError, match="set http_listen too"):
        config(http_public_url="https://wheel.example.com")


def test_denied_networks_default_to_metadata_and_link_local_and_can_be_replaced() -> None:
    assert "169.254.0.0/16" in config().denied_networks
    assert config(notify_deny_networks=" 10.0.0.0/8 , ,fe80::/10").denied_networks == (
        "10.0.0.0/8",
        "fe80::/10",
    )
    assert config(notify_deny_networks="").denied_networks == ()


def test_the_dsn_and_the_etcd_password_are_not_shown_in_repr() -> None:
    assert "secret" not in repr(config(postgres_dsn="postgresql://u:secret@h/db"))
    shown = config(etcd_user="wheel", etcd_password="hunter2")
    assert "hunter2" not in repr(shown)
    assert "hunter2" not in repr(shown.etcd())
    assert shown.etcd().password == "hunter2"


def test_the_etcd_password_is_read_from_its_file(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("from-a-file\n")
    chosen = config(etcd_user="wheel", etcd_password_file=str(secret))
    assert chosen.etcd().password == "from-a-file"
    with pytest.raises(ConfigError) as raised:
        config(etcd_user="wheel", etcd_password_file=str(tmp_path / "missing"))
    assert raised.value.field == "etcd_password_file"


def test_notification_payloads() -> None:
    ms = 1_767_225_600_000
    parsed = parse_notification(f"{ms - 9}|3:{ms},12:{ms + 5}")
    assert parsed.earliest == {
        PartitionId(3): datetime.fromtimestamp(ms / 1000, UTC),
        PartitionId(12): datetime.fromtimestamp((ms + 5) / 1000, UTC),
    }
    assert parsed.created_at == datetime.fromtimestamp((ms - 9) / 1000, UTC)
    assert parse_notification("6:0").created_at is None, "a resume or retry: no created filter"
    assert parse_notification("*").earliest is None
    assert parse_notification("garbage").earliest is None


def test_a_burst_of_notifications_is_handled_as_one() -> None:
    ms = 1_800_000_000_000
    merged = merge(
        [
            parse_notification(f"{ms}|3:{ms + 500}"),
            parse_notification(f"{ms - 20}|3:{ms + 100},4:{ms + 900}"),
            parse_notification(f"{ms + 5}|4:{ms + 700}"),
        ]
    )
    assert merged.earliest is not None
    assert {p: int(t.timestamp() * 1000) for p, t in merged.earliest.items()} == {
        3: ms + 100,
        4: ms + 700,
    }, "each partition from its earliest instant"
    assert merged.created_at is not None
    assert int(merged.created_at.timestamp() * 1000) == ms - 20, "from the oldest creation"
    assert merge([parse_notification(f"{ms}|3:{ms}"), parse_notification("6:0")]).created_at is None
    assert merge([parse_notification(f"{ms}|3:{ms}"), parse_notification("*")]).earliest is None


async def test_a_listener_stopped_while_it_waits_leaves_no_task_behind() -> None:
    reading = asyncio.Event()

    class Silent:
        """A connection on which no notification ever arrives."""

        async def notifies(self) -> AsyncIterator[Notify]:
            reading.set()  # the listener waits on its queue by now
            await asyncio.Event().wait()
            yield Notify("wheel_due", "", 0)

    async def handle(_: object) -> None:
        raise AssertionError("nothing arrived")

    follow = asyncio.create_task(_follow(Silent(), handle))  # type: ignore[arg-type]
    await reading.wait()
    assert len(asyncio.all_tasks()) == 4, "this test, the listener, its reader and its get"
    follow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await follow
    assert asyncio.all_tasks() == {asyncio.current_task()}, "the get is cancelled too"
