"""An executor given node addresses that reaches none names them, where they came from and
why each failed ("Connection refused"), not the cluster's name it never used."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import pytest

from wheel.executor.cluster_feed import ClusterFeed
from wheel.executor.reach import Reach


@pytest.fixture
def refusing() -> Iterator[str]:
    """A port nothing listens on: connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


async def test_the_feed_keeps_each_addresses_last_error(refusing: str) -> None:
    feed = ClusterFeed([refusing], token="whl_x")
    assert await feed._watch(refusing) is False
    assert feed.errors[refusing].startswith("UNAVAILABLE: ")
    assert "refused" in feed.errors[refusing].lower()


async def test_no_node_names_the_refused_addresses_and_wheel_nodes(
    refusing: str, caplog: pytest.LogCaptureFixture
) -> None:
    feed = ClusterFeed([refusing], token="whl_x")
    await feed._watch(refusing)
    reach = Reach(dict, executor_id="mine", cluster="default", interval_s=1,
                  seeds=(refusing,), seeds_from="WHEEL_NODES",
                  seed_errors=lambda: feed.errors)  # fmt: skip
    with caplog.at_level(logging.ERROR, logger="wheel.executor.reach"):
        reach.check()
    (record,) = [r for r in caplog.records if r.getMessage() == "executor.no_node"]
    reason = str(record.__dict__["reason"])
    assert f"no scheduler node answers at {refusing} (from WHEEL_NODES)" in reason
    assert "refused" in reason.lower()
    assert "--cluster" not in reason


def test_an_executor_reading_etcd_still_points_at_the_cluster(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reach = Reach(dict, executor_id="mine", cluster="prod", interval_s=1)
    with caplog.at_level(logging.ERROR, logger="wheel.executor.reach"):
        reach.check()
    (record,) = [r for r in caplog.records if r.getMessage() == "executor.no_node"]
    assert "check --cluster" in str(record.__dict__["reason"])
