"""Probing a process's plain-HTTP port as the kubelet does: a GET, its status and body."""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from collections.abc import Callable


def probe(address: str, path: str, timeout_s: float = 1.0) -> tuple[int, str]:
    """GET http://address/path: (status, body); (0, why) when nothing answers (blocking)."""
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=timeout_s) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc)


async def probe_until(
    address: str,
    path: str,
    wanted: Callable[[int, str], bool],
    *,
    within_s: float = 60.0,
    every_s: float = 0.2,
) -> tuple[int, str]:
    """Probe every `every_s` (a kubelet polls too) until `wanted(status, body)`; the answer."""
    deadline = time.monotonic() + within_s
    answer = (0, "never probed")
    while time.monotonic() < deadline:
        answer = await asyncio.to_thread(probe, address, path)
        if wanted(*answer):
            return answer
        await asyncio.sleep(every_s)
    raise AssertionError(f"{path} at {address}: last answer {answer} after {within_s} s")
