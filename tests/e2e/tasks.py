"""Tasks the end-to-end cluster's executors run (imported by `wheel executor --tasks`)."""

from __future__ import annotations

import asyncio
import os

import wheel


@wheel.task("noop")
def noop(ctx: wheel.TaskContext) -> None:
    """Nothing: measures the scheduler, not the work."""


@wheel.task("fail")
def fail(ctx: wheel.TaskContext) -> None:
    raise RuntimeError(f"boom on attempt {ctx.attempt}")


@wheel.task("hang_first")
async def hang_first(ctx: wheel.TaskContext) -> None:
    """The first attempt outlives any lease unless its executor dies; later ones succeed."""
    if ctx.attempt == 1:
        await asyncio.sleep(float(ctx.payload or b"600"))


@wheel.task("poison")
def poison(ctx: wheel.TaskContext) -> None:
    """Kills the executor process that runs it."""
    os._exit(17)


@wheel.task("noop_async")
async def noop_async(ctx: wheel.TaskContext) -> None:
    """Nothing, on the event loop: no hop to a worker thread."""


@wheel.task("busy")
async def busy(ctx: wheel.TaskContext) -> None:
    """Holds its slot for the payload's seconds (default 0.05): capacity a test can size."""
    await asyncio.sleep(float(ctx.payload or b"0.05"))
