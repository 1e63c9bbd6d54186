"""ExecutorConfig refuses what it cannot run with, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from wheel.errors import ConfigError
from wheel.executor.config import ExecutorConfig


def test_defaults() -> None:
    config = ExecutorConfig("ex-1")
    assert dict(config.pools) == {"default": 64}
    assert (config.cluster, config.drain_timeout_s, config.capacity, config.threads) == (
        "default",
        30.0,
        64,
        64,
    )


def test_pools_are_copied_and_frozen() -> None:
    pools = {"default": 4, "slow": 2}
    config = ExecutorConfig("ex-1", pools=pools)
    pools["default"] = 100
    assert config.pools["default"] == 4
    assert config.capacity == 6
    with pytest.raises(TypeError):
        config.pools["slow"] = 3  # type: ignore[index]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"executor_id": ""}, "executor_id"),
        ({"executor_id": "a/b"}, "executor_id"),
        ({"cluster": "has space"}, "cluster"),
        ({"etcd_endpoint": "localhost"}, "etcd_endpoint"),
        ({"etcd_endpoint": "a:1,,b"}, "etcd_endpoint"),
        ({"etcd_ca_file": "/no/such/ca.pem"}, "etcd_ca_file"),
        ({"etcd_cert_file": "/no/such/cert.pem"}, "etcd_key_file"),
        ({"etcd_password": "secret"}, "etcd_user"),
        ({"task_modules": ("my-tasks",)}, "task_modules"),
        ({"pools": {}}, "pools"),
        ({"pools": {"default": 0}}, "pools"),
        ({"pools": {"default": True}}, "pools"),
        ({"pools": {"a/b": 1}}, "pools"),
        ({"drain_timeout_s": -1}, "drain_timeout_s"),
        ({"flush_timeout_s": -1}, "flush_timeout_s"),
        ({"reconnect_min_s": 0}, "reconnect_min_s"),
        ({"reconnect_min_s": 2, "reconnect_max_s": 1}, "reconnect_max_s"),
        ({"thread_pool_size": 0}, "thread_pool_size"),
        ({"session_ttl_s": 0}, "session_ttl_s"),
    ],
)
def test_invalid_values_name_their_field(changes: dict[str, Any], field: str) -> None:
    arguments: dict[str, Any] = {"executor_id": "ex-1", **changes}
    with pytest.raises(ConfigError) as raised:
        ExecutorConfig(**arguments)
    assert raised.value.field == field
