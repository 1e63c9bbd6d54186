"""`make dev` brings up the whole local cluster, runs its examples and the README's tour,
and Ctrl-C takes it all down.

Its output is read as it comes (stdout is a pipe, so the live view prints a
line per change of state); every wait is for a line, bounded by a deadline.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO

import psycopg

from tests.e2e.readme import run_tour
from tests.processes import alive, children, wait_for_exit
from tests.services import service_data_root
from wheel import eventloop
from wheel.store import Store

ROOT = Path(__file__).resolve().parents[2]
WHEEL = str(Path(sys.executable).parent / "wheel")


class Output:
    """A child's output lines, read on a thread so waits can have deadlines."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def until(self, wanted: Callable[[str], bool], timeout_s: float, what: str) -> str:
        """The first line (from here on) that is `wanted`; fails on end of output or time."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {what} within {timeout_s} s:\n{self.text}") from None
            if line is None:
                raise AssertionError(f"output ended before {what}:\n{self.text}")
            self.lines.append(line)
            if wanted(line):
                return line

    def seen(self, wanted: Callable[[str], bool], timeout_s: float, what: str) -> str:
        """The first line, read already or from here on, that is `wanted`: for lines whose
        order among each other is not fixed (two runs ending in one refresh of the view)."""
        for line in self.lines:
            if wanted(line):
                return line
        return self.until(wanted, timeout_s, what)

    def rest(self, timeout_s: float) -> str:
        """Everything up to the end of the output."""
        start = len(self.lines)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"output did not end within {timeout_s} s:\n{self.text}"
                ) from None
            if line is None:
                return "".join(self.lines[start:])
            self.lines.append(line)

    @property
    def text(self) -> str:
        return "".join(self.lines)


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


def _line(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda line: compiled.search(line) is not None


async def _tenant_of(dsn: str, token: str) -> str | None:
    store = await Store.open(dsn, min_size=1, max_size=1)
    try:
        tenant = await store.tenants.authenticate(token)
        if tenant is None:
            return None
        async with store.pool.connection() as conn:
            cursor = await conn.execute("SELECT name FROM tenants WHERE id = %s", (tenant,))
            row = await cursor.fetchone()
        return None if row is None else str(row[0])
    finally:
        await store.close()


def test_make_dev_runs_the_examples_and_ctrl_c_leaves_no_process() -> None:
    data_dir = service_data_root() / "dev"
    env = {
        **os.environ,
        "WHEEL_DEV_DATA_DIR": str(data_dir),
        # Free ports: other test runs may share this machine.
        "WHEEL_DEV_API_PORT": "0",
        "WHEEL_DEV_METRICS_PORT": "0",
    }
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
            output = Output(make.stdout)
            output.until(lambda line: line.strip() == "wheel dev: ready", 90, "ready")

            path = data_dir / "dev.json"
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, "it holds a token"
            state = json.loads(path.read_text())
            dsn = state["postgres"]["dsn"]
            with psycopg.connect(dsn) as conn:
                assert conn.execute("SELECT current_database()").fetchone() == ("wheel",)
            assert eventloop.run(_tenant_of(dsn, state["token"])) == "dev"
            banner = output.text
            assert f"--endpoints {state['etcd']['endpoint']} get --prefix /wheel/dev/" in banner
            exported = dict(re.findall(r"^  export (WHEEL_\w+)=(\S+)$", banner, re.MULTILINE))
            # The dashboard the banner names answers with its sign-in page.
            dashboard = re.search(r"^dashboard +(http://\S+)", banner, re.MULTILINE)
            assert dashboard is not None, banner
            with urllib.request.urlopen(f"{dashboard.group(1)}/signin", timeout=10) as page:
                assert page.status == 200
                assert "Sign in" in page.read().decode()
            assert exported == {
                "WHEEL_ENDPOINTS": ",".join(state["endpoints"]),
                "WHEEL_TOKEN": state["token"],
            }
            assert [n["id"] for n in state["nodes"]] == ["dev-0", "dev-1", "dev-2"]
            cluster = [n["pid"] for n in state["nodes"]] + [state["executor"]["pid"]]
            main = [state["pid"], state["etcd"]["pid"], state["postgres"]["pid"], *cluster]
            assert all(alive(pid) for pid in main)
            # Postgres's background processes; some (autovacuum workers) come and go.
            watched = [*main, *children(state["postgres"]["pid"])]

            # The CLI as the banner says to use it: the examples are the dev tenant's jobs.
            listed = subprocess.run(
                [WHEEL, "jobs", "list", "--output", "json"],
                env={**os.environ, **exported}, capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            assert listed.returncode == 0, listed.stderr
            names = {job["name"] for job in json.loads(listed.stdout)["items"]}
            assert names == {"hello", "tick", "always-fails", "london-every-minute"}

            output.seen(_line(r"\bhello +succeeded +attempt=1/3 "), 30, "hello succeeded")
            dead = output.seen(_line(r"\balways-fails +dead +attempt=3/3 "), 30, "a dead one")
            assert "error=RuntimeError: example failure on attempt 3" in dead
            with psycopg.connect(dsn) as conn:
                rows = conn.execute(
                    "SELECT a.number, a.outcome::text FROM attempts a"
                    " JOIN jobs j ON j.id = a.job_id WHERE j.name = 'always-fails'"
                    " ORDER BY a.number"
                ).fetchall()
            assert rows == [(1, "failed"), (2, "failed"), (3, "failed")]

            # Your own executor, as the banner says to start it: dev.json has its token.
            yours = re.search(r"^  export (WHEEL_NODES=.*)$", banner, re.MULTILINE)
            assert yours is not None, banner
            settings = dict(item.split("=", 1) for item in yours.group(1).split())
            assert settings["WHEEL_EXECUTOR_TOKEN"] == state["executor_token"]
            assert "WHEEL_ETCD_ENDPOINT" not in settings  # it needs no etcd
            mine = subprocess.Popen(
                [WHEEL, "executor", "--tasks", "wheel.dev.tasks", "--executor-id", "mine"],
                env={**os.environ, **settings}, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                streams = _until_streaming(exported, "mine", within_s=30)
                assert len(streams) == 3, "it streams to every node"
            finally:
                mine.terminate()
                assert mine.wait(timeout=30) == 0

            # The README's tour, as written there, against this cluster.
            cli, sdk = run_tour(exported)
            assert "DEAD: failed all 3 attempts" in cli
            assert "01:30 does not exist on 2027-03-28 in Europe/London" in cli
            assert "2027-12-25  Sat  Christmas Day" in cli  # the tour's calendar
            # Three days back from now: 2 to 4 nightly runs, as DST moves them.
            assert re.search(r"\b[2-4] created, 0 existed", cli), cli
            assert "smeared by" in sdk

            os.killpg(make.pid, signal.SIGINT)
            rest = output.rest(timeout_s=60)
            make.wait(timeout=10)
        finally:
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)

    # make, signalled too, waits for wheel dev and then dies of SIGINT itself, as it should.
    assert make.returncode in (0, -signal.SIGINT), rest
    assert "wheel dev: SIGINT received, stopping" in rest
    for name in ["dev-executor", "dev-0", "dev-1", "dev-2"]:
        assert f"wheel dev: {name} stopped, exit code 0" in rest, rest
    assert rest.rstrip().endswith("wheel dev: stopped"), rest
    for pid in watched:
        assert wait_for_exit(pid, timeout_s=10), f"process {pid} outlived make dev"
    assert _processes_using(data_dir) == []
    shutil.rmtree(data_dir.parent)


def _until_streaming(env: dict[str, str], executor_id: str, within_s: float) -> list[object]:
    """The executor's streams as `wheel executors` lists them, once it has some."""
    deadline = time.monotonic() + within_s
    while True:
        listed = subprocess.run(
            [WHEEL, "executors", "--output", "json"],
            env={**os.environ, **env}, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        found = [e for e in json.loads(listed.stdout) if e["executor_id"] == executor_id]
        if found and len(found[0]["links"]) == 3:
            return list(found[0]["links"])
        assert time.monotonic() < deadline, f"{executor_id} never streamed: {listed.stdout}"
        time.sleep(0.5)  # the nodes publish their executors about once a second
