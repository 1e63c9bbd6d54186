"""etcd as production runs it: three members; the leader is killed, then a follower for good.

Two `wheel scheduler` processes name all three members; one `wheel executor`
reaches the cluster through the nodes. Runs come due every quarter second
throughout. The figures (how long etcd had no leader, how late runs started,
partitions moved) are printed (-s); behaviour is asserted.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.runs import jobs, lateness_ms, settle, statuses, summary, whole_second
from wheel.local.etcd_cluster import EtcdCluster, EtcdMember
from wheel.store import Store


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdCluster]:
    members = EtcdCluster.start(tmp_path / "etcd", durable=False)
    try:
        yield members
    finally:
        members.stop()


async def _new_leader(etcd: EtcdCluster, gone: EtcdMember, within: float = 30.0) -> float:
    """Seconds until the running members agree on a leader other than `gone`."""
    began = time.monotonic()
    while time.monotonic() - began < within:
        leader = etcd.leader()
        if leader is not None and leader is not gone:
            return time.monotonic() - began
        await asyncio.sleep(0.05)  # polling another process's state: nothing to await
    raise TimeoutError(f"no new etcd leader within {within} s")


def _moves(cluster: Cluster) -> int:
    return sum(
        1 for node in cluster.nodes.values() for e in node.events()
        if e.get("event") == "node.partition_released"
    )  # fmt: skip


async def test_losing_the_etcd_leader_then_a_follower_loses_no_run(
    etcd: EtcdCluster, database_dsn: str, store: Store, tmp_path: Path
) -> None:
    cluster = Cluster(database_dsn, etcd.members[0].port, f"e2e-{uuid.uuid4().hex[:10]}",
                      logs=tmp_path / "logs")  # fmt: skip
    (tmp_path / "logs").mkdir()
    try:
        for n in range(2):
            cluster.start_node(f"node-{n}", etcd_endpoint=etcd.endpoints)
        cluster.start_executor("executor-0")
        await cluster.ready()
        settled_moves = _moves(cluster)
        tenant = (await store.tenants.create("acme")).id
        start = whole_second(3)
        instants = [start + timedelta(milliseconds=250 * n) for n in range(120)]  # 30 s
        created = await jobs(store, tenant, "noop", instants)
        ids = [job.id for job in created]

        await cluster.wait_until(lambda: statuses(cluster, ids).get("succeeded", 0) >= 20)
        leader = etcd.leader()
        assert leader is not None
        etcd.kill(leader)
        without_leader_s = await _new_leader(etcd, leader)
        etcd.restart(leader)

        # Then a follower, for good: the one every node names first if it follows.
        now_leading = etcd.leader()
        followers = [m for m in etcd.members if m.running() and m is not now_leading]
        follower = etcd.members[0] if etcd.members[0] in followers else followers[0]
        etcd.kill(follower)

        await settle(cluster, ids, "succeeded", within=120)
        late = lateness_ms(cluster, ids)
        print(
            f"\netcd without a leader for {without_leader_s:.2f} s after its leader "
            f"({leader.name}) was killed; {follower.name}, a follower, killed for good"
        )
        print(summary("runs through both faults", late))
        moved = _moves(cluster) - settled_moves
        print(f"partitions released and taken again: {moved}")
        attempts = cluster.query(
            "SELECT count(*) FROM executions WHERE job_id = ANY(%s) AND attempt > 1", ids
        )[0][0]
        print(f"runs started twice: {attempts}")

        assert statuses(cluster, ids) == {"succeeded": len(ids)}, "every run, once done"
        assert cluster.executors["executor-0"].running(), "the executor kept running"
        assert cluster.executors["executor-0"].starts == 1
        assert all(node.running() for node in cluster.nodes.values())
        await cluster.ready(within=30)  # every partition owned, every link up
        assert late[-1] < 15_000, "no run waited longer than a session and a move"
    finally:
        cluster.stop()
