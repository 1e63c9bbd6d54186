"""A Patroni cluster's processes die with the process that started it, whatever kills it.

Patroni detaches its postmaster from itself, so this is the subreaper guard's contract
under test: the postmasters and their backends go too, not only the Patronis.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap

from tests.processes import alive, children, wait_for_exit
from tests.services import service_data_root
from wheel.local import LocalServices
from wheel.local.patroni import PatroniCluster, delete_etcd_prefix

HOLDER = textwrap.dedent(
    """
    import json, sys, threading
    from pathlib import Path
    from tests.processes import cluster_pids
    from wheel.local.patroni import PatroniCluster

    cluster = PatroniCluster.start(
        Path(sys.argv[1]), etcd_port=int(sys.argv[2]), namespace=sys.argv[3]
    )
    cluster.wait_for_sync_standby()
    postmasters = [member.postmaster_pid() for member in cluster.members]
    print(json.dumps({"all": cluster_pids(cluster), "postmasters": postmasters}), flush=True)
    threading.Event().wait()
    """
)


def test_a_killed_holder_takes_every_patroni_and_postgres_process_along(
    local_services: LocalServices,
) -> None:
    root = service_data_root()
    namespace = f"/wheel-test/orphans-{root.name}/"
    argv = [sys.executable, "-c", HOLDER, str(root), str(local_services.etcd.port), namespace]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdout is not None
        pids = json.loads(holder.stdout.readline())
        assert all(pid is not None for pid in pids["postmasters"])
        assert set(pids["postmasters"]) <= set(pids["all"])
        assert all(alive(pid) for pid in pids["postmasters"])

        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)

        for pid in pids["all"]:
            assert wait_for_exit(pid, timeout_s=45), f"process {pid} outlived its holder"
    shutil.rmtree(root)
    assert delete_etcd_prefix(local_services.etcd.port, namespace)


def test_a_patroni_killed_alone_leaves_no_postgres_behind(patroni_cluster: PatroniCluster) -> None:
    # Without the guard, this postmaster would run on, re-parented to init.
    standby = patroni_cluster.sync_standby()
    assert standby is not None
    assert standby.guard is not None
    patroni_pid, postmaster_pid = standby.patroni_pid(), standby.postmaster_pid()
    assert patroni_pid is not None
    assert postmaster_pid is not None
    backends = children(postmaster_pid)
    assert backends, "a running postmaster has background processes"

    os.kill(patroni_pid, signal.SIGKILL)

    assert standby.guard.wait(timeout=15) == 128 + signal.SIGKILL
    for pid in [postmaster_pid, *backends]:
        assert wait_for_exit(pid, timeout_s=15), f"process {pid} outlived its Patroni"
