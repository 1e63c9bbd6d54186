"""Child processes that never outlive their parent.

The contract: `spawn` starts a server in its own session (a terminal's signals
do not reach it) with PR_SET_PDEATHSIG, so the kernel sends it `death_signal`
when the spawning *thread* exits. Spawn from a thread that lives as long as the
server should (the main thread), never from a short-lived worker thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from wheel.local.service_user import ServiceUser

_PR_SET_PDEATHSIG = 1


def _death_signal_setter(death_signal: int) -> Callable[[], None] | None:
    """Build the preexec hook that ties the child to this process, on Linux."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    parent = os.getpid()

    def tie_to_parent() -> None:
        # Runs in the child after setuid, which would otherwise clear the setting.
        libc.prctl(_PR_SET_PDEATHSIG, death_signal)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), death_signal)

    return tie_to_parent


def spawn(
    argv: Sequence[str],
    *,
    log_path: Path,
    death_signal: int,
    user: ServiceUser | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start `argv` with output appended to `log_path`, tied to this process."""
    log = log_path.open("ab")
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_death_signal_setter(death_signal),
            user=user.uid if user else None,
            group=user.gid if user else None,
            extra_groups=[] if user else None,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
    finally:
        log.close()


def stop(process: subprocess.Popen[bytes], sig: int, timeout_s: float) -> bool:
    """Send `sig`, wait up to `timeout_s`, then SIGKILL and reap.

    Returns whether it exited on `sig` alone (False: it had to be killed).
    """
    if process.poll() is not None:
        return True
    try:
        process.send_signal(sig)
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False
    return True


def run(argv: Sequence[str], *, user: ServiceUser | None, log_path: Path) -> int:
    """Run a short command to completion (e.g. initdb) as `user`; return its exit code."""
    with log_path.open("ab") as log:
        return subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            user=user.uid if user else None,
            group=user.gid if user else None,
            extra_groups=[] if user else None,
            # Its own session, like `spawn`: a terminal's Ctrl-C goes to wheel, which
            # decides, and does not kill initdb halfway through a data directory.
            start_new_session=True,
            check=False,
        ).returncode


__all__ = ["run", "spawn", "stop"]
