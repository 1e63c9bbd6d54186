"""`make dev` brings up the local cluster and Ctrl-C takes all of it down."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import psycopg

from tests.conftest import service_data_root
from tests.processes import alive, children, wait_for_exit

ROOT = Path(__file__).resolve().parents[2]


def _processes_using(path: Path) -> list[int]:
    """Live processes whose command line mentions `path`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if str(path) in cmdline and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def test_make_dev_starts_services_and_ctrl_c_leaves_no_process() -> None:
    data_dir = service_data_root() / "dev"
    env = {**os.environ, "WHEEL_DEV_DATA_DIR": str(data_dir)}
    # Its own process group, like a terminal's foreground job: Ctrl-C signals the group.
    with subprocess.Popen(
        ["make", "--no-print-directory", "dev"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as make:
        try:
            assert make.stdout is not None
            output = []
            for line in make.stdout:
                output.append(line)
                if line.strip() == "wheel dev: ready":
                    break
            else:
                raise AssertionError("make dev exited before ready:\n" + "".join(output))

            state = json.loads((data_dir / "dev.json").read_text())
            with psycopg.connect(state["postgres"]["dsn"]) as conn:
                assert conn.execute("SELECT current_database()").fetchone() == ("wheel",)
            inspect = f"--endpoints {state['etcd']['endpoint']} get --prefix /wheel/"
            assert inspect in "".join(output)
            main = [state["pid"], state["etcd"]["pid"], state["postgres"]["pid"]]
            assert all(alive(pid) for pid in main)
            # Postgres's background processes; some (autovacuum workers) come and go.
            watched = [*main, *children(state["postgres"]["pid"])]

            os.killpg(make.pid, signal.SIGINT)
            rest = make.stdout.read()
            make.wait(timeout=60)
        finally:
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)

    assert "wheel dev: SIGINT received, stopping" in rest
    assert "wheel dev: stopped" in rest
    for pid in watched:
        assert wait_for_exit(pid, timeout_s=10), f"process {pid} outlived make dev"
    assert _processes_using(data_dir) == []
    shutil.rmtree(data_dir.parent)
