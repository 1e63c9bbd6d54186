"""Tasks the robustness cluster's executors run (`wheel executor --tasks`).

Each handler writes a `start` line before its work and a `finish` line after it, to
the file $WHEEL_ROBUSTNESS_STARTS names (one per executor): the executor side of the
history. A line is one O_APPEND write, so it is whole even if the process is killed.
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime

import wheel

EXECUTOR = os.environ.get("WHEEL_ROBUSTNESS_EXECUTOR", "")


def _note(kind: str, ctx: wheel.TaskContext, **extra: object) -> None:
    line = json.dumps({
        "kind": kind, "job_id": str(ctx.job_id), "scheduled_for": ctx.scheduled_for.isoformat(),
        "fence": ctx.fence, "attempt": ctx.attempt, "executor": EXECUTOR, "pid": os.getpid(),
        "at": datetime.now(UTC).isoformat(), **extra,
    })  # fmt: skip
    fd = os.open(os.environ["WHEEL_ROBUSTNESS_STARTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


@wheel.task("work")
async def work(ctx: wheel.TaskContext) -> None:
    """Holds its slot for the payload's seconds."""
    _note("start", ctx)
    await asyncio.sleep(float(ctx.payload or b"0.05"))
    _note("finish", ctx, outcome="returned")


@wheel.task("flaky")
async def flaky(ctx: wheel.TaskContext) -> None:
    """Fails its first attempt (a retry follows), then works like `work`."""
    _note("start", ctx)
    await asyncio.sleep(float(ctx.payload or b"0.05"))
    if ctx.attempt == 1:
        _note("finish", ctx, outcome="raised")
        raise RuntimeError("the first attempt fails")
    _note("finish", ctx, outcome="returned")
