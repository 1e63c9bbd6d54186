"""A scheduler node process killed outright stays visible: `wheel nodes` says the cluster is
short of it, when it was lost and who took its partitions; `wheel executors` reads in slots."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import uuid

import pytest

from tests.e2e.cluster import WHEEL, Cluster
from wheel.coordinator.departures import departures
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.mirror import PrefixMirror
from wheel.store import Store


def wheel_cli(*args: str, endpoint: str, token: str) -> str:
    done = subprocess.run(
        [WHEEL, *args, "--endpoint", endpoint],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "WHEEL_TOKEN": token, "COLUMNS": "120", "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_a_killed_node_is_listed_lost_with_who_took_its_partitions(
    cluster: Cluster, store: Store
) -> None:
    for n in range(3):
        cluster.start_node(f"node-{n}")
    cluster.start_executor("executor-0")
    try:
        await cluster.ready()
    except TimeoutError:
        pytest.fail(f"cluster did not settle\n{cluster.dump_logs()}")
    tenant = await store.tenants.create(f"ops-{uuid.uuid4().hex[:6]}")
    token = (await store.tenants.create_token(tenant.id, "ops"))[1]
    endpoint = cluster.nodes["node-0"].address
    held = cluster.partitions_owned("node-2")
    assert held

    etcd = await Etcd.connect(f"127.0.0.1:{cluster.etcd_port}")
    layout = Layout(cluster.name)
    mirror = PrefixMirror(etcd, layout.departed)
    await mirror.start()
    try:
        cluster.nodes["node-2"].signal(signal.SIGKILL)
        async with asyncio.timeout(60):
            while True:  # until every partition it held has a taker
                changed = mirror.changed
                found = [d for d in await departures(etcd, layout) if d.node_id == "node-2"]
                if found and len(found[0].taken) == held:
                    break
                await changed.wait()
    finally:
        await mirror.stop()
        await etcd.close()

    roster = json.loads(wheel_cli("nodes", "--output", "json", endpoint=endpoint, token=token))
    assert [n["node_id"] for n in roster["nodes"]] == ["node-0", "node-1"]
    assert roster["expected"] == 3
    [gone] = roster["departed"]
    assert gone["node_id"] == "node-2"
    assert gone["state"] == "lost"
    assert gone["gone_at"]
    assert set(gone["taken"].values()) <= {"node-0", "node-1"}
    assert len(gone["taken"]) == held

    text = wheel_cli("nodes", endpoint=endpoint, token=token)
    assert "2 of 3 expected nodes are live: lost node-2" in text
    [row] = [line for line in text.splitlines() if "node-2" in line and "UTC" in line]
    assert "lost" in row
    assert "ago" in row
    assert str(held) in row
    assert "node-0 (" in row or "node-1 (" in row

    executors = wheel_cli("executors", endpoint=endpoint, token=token)
    assert "default 16 of 16 free" in executors
    assert "50016" not in executors
