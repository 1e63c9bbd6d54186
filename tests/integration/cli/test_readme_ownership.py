"""The README's "Inspecting ownership" block runs as written against a real cluster: with
WHEEL_ETCD_ENDPOINT and WHEEL_CLUSTER set, `wheel shards` and etcdctl show the owners."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from tests.e2e.readme import block
from tests.integration.nodes import NodeFactory
from wheel.local import LocalServices
from wheel.local.etcd import etcd_binary
from wheel.scheduler.node import SchedulerNode

BIN = Path(sys.executable).parent


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    started = await start_node()
    await started.ready.wait()
    return started


async def test_the_ownership_block_runs_as_written(
    node: SchedulerNode, local_services: LocalServices
) -> None:
    env = {
        **os.environ,
        "WHEEL_ETCD_ENDPOINT": local_services.etcd.endpoint,
        "WHEEL_CLUSTER": node.config.cluster,
        "PATH": os.pathsep.join([str(BIN), str(etcd_binary().parent), os.environ["PATH"]]),
    }
    # A subprocess of this loop's own: the node answers on it meanwhile.
    process = await asyncio.create_subprocess_exec(
        "bash", "-euo", "pipefail", "-c", block("ownership"), env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()
    text = stdout.decode()
    partitions = node.config.partitions
    assert f"{partitions} of {partitions} partitions held" in text
    values = [line for line in text.splitlines() if line.startswith("{")]
    assert len(values) == partitions, "etcdctl printed every partition's record"
    assert all(node.config.node_id in json.dumps(json.loads(v)) for v in values)
