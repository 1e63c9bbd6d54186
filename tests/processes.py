"""Watching processes the tests did not start themselves (servers' pids)."""

from __future__ import annotations

import os
import select
from pathlib import Path
from typing import TYPE_CHECKING

from wheel.local.subreaper import children_of

if TYPE_CHECKING:
    from wheel.local.patroni import PatroniCluster


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting to be reaped has exited: not alive)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def children(pid: int) -> list[int]:
    """Direct children of `pid` (what a guard process adopts counts)."""
    return children_of(pid)


def wait_for_exit(pid: int, timeout_s: float) -> bool:
    """Block until `pid` exits (via a pidfd: an event, not a polling sleep)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout_s)
        return bool(readable) or not alive(pid)
    finally:
        os.close(fd)


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
