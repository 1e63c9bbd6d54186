"""Servers die with the process that started them, whatever kills it."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.processes import alive, children, wait_for_exit
from tests.services import service_data_root
from wheel.local import LocalServices

HOLDER = textwrap.dedent(
    """
    import json, sys, threading
    from pathlib import Path
    from wheel.local import LocalServices

    services = LocalServices.start(Path(sys.argv[1]), durable=False)
    print(json.dumps({"etcd": services.etcd.process.pid,
                      "postgres": services.postgres.process.pid}), flush=True)
    threading.Event().wait()
    """
)


@pytest.mark.parametrize("kill_with", [signal.SIGKILL, signal.SIGTERM])
def test_servers_die_with_their_parent(kill_with: signal.Signals) -> None:
    root = service_data_root()
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)], stdout=subprocess.PIPE, text=True
    ) as holder:
        assert holder.stdout is not None
        pids = json.loads(holder.stdout.readline())
        assert alive(pids["etcd"])
        assert alive(pids["postgres"])
        # Postgres's background processes; some (autovacuum workers) come and go.
        backends = children(pids["postgres"])
        assert backends, "a running postmaster has background processes"
        watched = [pids["etcd"], pids["postgres"], *backends]

        holder.send_signal(kill_with)
        holder.wait(timeout=10)

        for pid in watched:
            assert wait_for_exit(pid, timeout_s=15), f"process {pid} outlived its parent"
    shutil.rmtree(root)


def test_stopping_services_ends_every_process() -> None:
    root = service_data_root()
    services = LocalServices.start(root, durable=False)
    watched = [services.etcd.process.pid, services.postgres.process.pid]
    watched += children(services.postgres.process.pid)  # transient ones may already be gone
    assert services.stop(), "both servers stop on their shutdown signal, without SIGKILL"
    assert services.postgres.process.returncode == 0
    assert not any(alive(pid) for pid in watched)
    shutil.rmtree(root)
