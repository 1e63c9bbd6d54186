"""CPU seconds used by process trees, from /proc: what each part of a run costs (Linux only).

A tree's figure is its root's own time, the time of its children it has
reaped (a Postgres backend that exited), and the time of every live
descendant, so nothing is counted twice and nothing that exited is lost.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            # The command name is in parentheses and may hold spaces: split after it.
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _parents() -> dict[int, int]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            found[int(entry)] = int(fields[1])
    return found


def tree_seconds(root: int, parents: Mapping[int, int] | None = None) -> float:
    """CPU seconds of `root` and everything under it, reaped or alive."""
    parents = _parents() if parents is None else parents
    fields = _stat(root)
    if fields is None:
        return 0.0
    # utime, stime, cutime, cstime: fields 14-17 of /proc/<pid>/stat.
    ticks = sum(int(f) for f in fields[11:15])
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if (child := _stat(pid)) is not None:
            ticks += int(child[11]) + int(child[12])
        stack.extend(children.get(pid, []))
    return ticks / _TICKS


def seconds_by_role(roots: Mapping[str, list[int]]) -> dict[str, float]:
    """CPU seconds per role, each role the sum of its process trees."""
    parents = _parents()
    return {role: sum(tree_seconds(pid, parents) for pid in pids) for role, pids in roots.items()}


def peak_rss_mib(pids: list[int]) -> float:
    """The largest peak resident set (VmHWM) of these processes, in MiB (0 when gone)."""
    peak = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            continue
    return peak / 1024
