"""A guard process that runs one command and ends everything it leaves behind.

Why: Patroni starts Postgres through a short-lived intermediate that calls
setsid and exits, so the postmaster is nobody's child. A death signal set on
Patroni never reaches it, and a postmaster whose Patroni was killed would
outlive Patroni, the test and the harness. This guard is a child subreaper
(PR_SET_CHILD_SUBREAPER): orphans among its descendants are re-parented to it,
not to init, so it can find and end them.

The contract:
- it runs the command as a child (as `--user` when given, with exactly the
  `--env` variables, output appended to `--log`), reaps whatever exits under
  it, and exits when the command does, after SIGKILLing every process still
  under it (a postmaster its Patroni left, that postmaster's backends);
- SIGTERM or SIGINT (its death signal when spawned with `process.spawn`) asks
  the command to stop with SIGTERM, waits up to `--grace-s`, then does the same.
If the guard itself is SIGKILLed, the command dies with it (its death signal)
but orphans already re-parented to the guard go to init: the one gap left.

    python -m wheel.local.subreaper --user wheel-postgres --log m0.log -- patroni m0.yml
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import os
import pwd
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from wheel.local import process
from wheel.local.service_user import ServiceUser

_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def children_of(pid: int) -> list[int]:
    """Processes whose parent is `pid` (for this guard: re-parented orphans included)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("PPid:"):
                if int(line.split()[1]) == pid:
                    found.append(int(entry.name))
                break
    return found


def end_descendants() -> None:
    """SIGKILL every child, reap, and repeat until none is left.

    A SIGKILLed postmaster's backends are re-parented here and found on the
    next round; `waitpid` raising ChildProcessError is the only exit.
    """
    while True:
        for pid in children_of(os.getpid()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _reap(command_pid: int) -> int | None:
    """Reap every exited child without blocking; the command's exit code if it was one.

    Reaping matters while the command shuts down: Patroni waits for its postmaster's
    pid to vanish, and a re-parented postmaster stays a zombie until this guard reaps it.
    """
    code = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == command_pid:
            code = os.waitstatus_to_exitcode(status)


def _exit_code(returncode: int) -> int:
    """A shell's convention: 128 + the signal number for a command a signal ended."""
    return 128 - returncode if returncode < 0 else returncode


def run(
    argv: Sequence[str],
    *,
    user: ServiceUser | None,
    env: dict[str, str],
    log_path: Path,
    grace_s: float,
) -> int:
    """Run `argv` under this guard; returns its exit code once nothing is left under it.

    Signals are taken synchronously (sigtimedwait on a blocked set), not by handlers:
    one loop reaps on SIGCHLD, turns SIGTERM or SIGINT into a stop, and times the grace.
    """
    _become_subreaper()
    child = process.spawn(argv, log_path=log_path, death_signal=signal.SIGKILL, user=user, env=env)
    # Blocked only after the spawn: a child inherits the mask, and Patroni must see SIGTERM.
    watched = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    code: int | None = None
    stop_by: float | None = None
    while True:
        reaped = _reap(child.pid)
        code = reaped if reaped is not None else code
        if code is not None:
            break
        remaining = None if stop_by is None else stop_by - time.monotonic()
        if remaining is not None and remaining <= 0:
            break
        info = (
            signal.sigwaitinfo(watched)
            if remaining is None
            else signal.sigtimedwait(watched, remaining)
        )
        if info is not None and info.si_signo != signal.SIGCHLD and stop_by is None:
            child.send_signal(signal.SIGTERM)
            stop_by = time.monotonic() + grace_s
    child.returncode = code  # reaped here, not by Popen
    end_descendants()
    return 128 + signal.SIGKILL if code is None else _exit_code(code)


def main(args: Sequence[str] | None = None) -> int:
    """Parse `--user --env K=V --log PATH --grace-s S -- command...` and run it guarded."""
    parser = argparse.ArgumentParser(prog="python -m wheel.local.subreaper")
    parser.add_argument("--user", help="a system user to run the command as")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--log", type=Path, required=True, help="the command's output, appended")
    parser.add_argument("--grace-s", type=float, default=15.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    parsed = parser.parse_args(args)
    command = parsed.command[1:] if parsed.command[:1] == ["--"] else parsed.command
    if not command:
        parser.error("no command given")
    user = None
    if parsed.user is not None:
        entry = pwd.getpwnam(parsed.user)
        user = ServiceUser(parsed.user, entry.pw_uid, entry.pw_gid)
    env = dict(item.split("=", 1) for item in parsed.env)
    return run(command, user=user, env=env, log_path=parsed.log, grace_s=parsed.grace_s)


if __name__ == "__main__":
    sys.exit(main())
