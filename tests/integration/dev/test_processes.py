"""Stopping `wheel dev`'s processes: SIGTERM first, SIGKILL after the timeout or a second Ctrl-C."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from wheel.dev.processes import Child, stop_all

# Says "ready" once its SIGTERM handling is in place, then waits to be stopped.
_OBEYS = "import sys; print('ready', flush=True); sys.stdin.read()"
_IGNORES = (
    "import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); sys.stdin.read()"
)


Start = Callable[[str, str], Child]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """Start a child running `code` and wait for its "ready"; all are reaped at the end."""
    started: list[subprocess.Popen[str]] = []

    def run(name: str, code: str) -> Child:
        child = Child(name, [sys.executable, "-c", code], tmp_path / f"{name}.log", {})
        popen = subprocess.Popen(
            child.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        started.append(popen)
        child.popen = popen  # type: ignore[assignment]
        assert popen.stdout is not None
        assert popen.stdout.readline() == "ready\n"
        return child

    yield run
    for popen in started:
        popen.kill()
        popen.communicate()  # reaps it and closes its pipes


async def test_children_that_obey_sigterm_stop_cleanly(start: Start) -> None:
    children = [start(f"c{n}", _OBEYS) for n in range(3)]
    stopped = await stop_all(children, timeout_s=30, hurry=asyncio.Event())
    assert [(s.name, s.clean, s.exit_code) for s in stopped] == [
        ("c0", True, -15), ("c1", True, -15), ("c2", True, -15)
    ]  # fmt: skip


async def test_a_child_ignoring_sigterm_is_killed_after_the_timeout(start: Start) -> None:
    obeys, ignores = start("obeys", _OBEYS), start("ignores", _IGNORES)
    stopped = await stop_all([obeys, ignores], timeout_s=0.5, hurry=asyncio.Event())
    assert [(s.name, s.clean, s.exit_code) for s in stopped] == [
        ("obeys", True, -15), ("ignores", False, -9)
    ]  # fmt: skip
    assert stopped[1].seconds >= 0.5


async def test_a_second_ctrl_c_kills_at_once(start: Start) -> None:
    ignores = start("ignores", _IGNORES)
    hurry = asyncio.Event()
    stopping = asyncio.create_task(stop_all([ignores], timeout_s=300, hurry=hurry))
    hurry.set()
    async with asyncio.timeout(30):
        (stopped,) = await stopping
    assert (stopped.clean, stopped.exit_code) == (False, -9)


async def test_children_already_gone_or_never_started_are_skipped(
    start: Start, tmp_path: Path
) -> None:
    gone = start("gone", _OBEYS)
    assert gone.popen is not None
    gone.popen.kill()
    gone.popen.wait()
    never = Child("never", ["true"], tmp_path / "never.log", {})
    assert await stop_all([gone, never], timeout_s=1, hurry=asyncio.Event()) == []
