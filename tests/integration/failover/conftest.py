"""A two-member Patroni cluster (synchronous mode) on the run's etcd, for failover tests."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator

import pytest

from tests.processes import alive, children
from tests.services import service_data_root
from wheel.local import LocalServices
from wheel.local.patroni import PatroniCluster


def cluster_pids(cluster: PatroniCluster) -> list[int]:
    """Every process of the cluster now: guards, Patronis, postmasters and their backends."""
    pids = []
    for member in cluster.members:
        if member.guard is None or not member.running:
            continue
        pids.append(member.guard.pid)
        for child in children(member.guard.pid):
            pids += [child, *children(child)]
    return pids


@pytest.fixture
def patroni_cluster(local_services: LocalServices) -> Iterator[PatroniCluster]:
    """Two members, a leader and a streaming synchronous standby; stopped with every process.

    Its keys live under a namespace of this test's own in the run's etcd; `stop()` deletes them.
    """
    root = service_data_root()
    cluster = PatroniCluster.start(
        root, etcd_port=local_services.etcd.port, namespace=f"/wheel-test/{uuid.uuid4().hex}/"
    )
    try:
        cluster.wait_for_sync_standby()
        yield cluster
    finally:
        watched = cluster_pids(cluster)
        stopped = cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert stopped, "every member stops within its grace period and the etcd keys are deleted"
    assert not [pid for pid in watched if alive(pid)], "a process of the cluster outlived stop()"
