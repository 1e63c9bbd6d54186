"""`wheel dev` configuration is validated and names the bad field."""

from __future__ import annotations

from pathlib import Path

import pytest

from wheel.devcluster import DevConfig
from wheel.errors import ConfigError


@pytest.mark.parametrize("field", ["etcd_port", "postgres_port"])
@pytest.mark.parametrize("port", [-1, 65536])
def test_out_of_range_port_is_refused(field: str, port: int) -> None:
    with pytest.raises(ConfigError) as caught:
        DevConfig(data_dir=Path("/var/lib/wheel-dev"), **{field: port})
    assert caught.value.field == field
    assert str(caught.value) == f"{field}: {port} is not a TCP port (0-65535)"


def test_port_zero_means_pick_one() -> None:
    config = DevConfig(data_dir=Path("/var/lib/wheel-dev"))
    assert (config.etcd_port, config.postgres_port) == (0, 0)
