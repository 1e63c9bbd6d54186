"""Waiting for a child server to become ready, or to fail trying."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from wheel.errors import LocalServiceError

POLL_S = 0.01


def wait_until_ready(
    service: str,
    process: subprocess.Popen[bytes],
    ready: Callable[[], bool],
    *,
    timeout_s: float,
    log_path: Path,
) -> None:
    """Poll `ready` until it holds; raise if the process exits or time runs out.

    Polling is the only signal these servers give (no readiness fd), so this is
    the one place that sleeps; it returns within POLL_S of readiness.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        code = process.poll()
        if code is not None:
            raise LocalServiceError(service, f"exited with code {code} while starting", log_path)
        if ready():
            return
        if time.monotonic() > deadline:
            raise LocalServiceError(service, f"not ready after {timeout_s:.0f} s", log_path)
        time.sleep(POLL_S)
