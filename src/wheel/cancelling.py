"""Ending tasks when a library may lose a cancellation.

psycopg_pool can hand a connection to a task that was cancelled while it waited for one,
and return it as if nothing happened: the CancelledError is never raised, though the
task's `cancelling()` count says it was asked (psycopg/psycopg#1345, still open in 3.3.3).
A node's loop that borrowed a connection at that instant went on forever, and a stop
that awaited it never returned: CI hung an hour in a node's teardown that way.

    await end(task)          # cancel, and cancel again until it has ended
    cancelled_meanwhile()    # in a loop: raise if a cancellation was lost on the way
"""

from __future__ import annotations

import asyncio
import contextlib

AGAIN_S = 5.0
"""How long a cancelled task has to end (its own cleanup included) before it is cancelled
again: use `end` only for tasks whose cleanup is quick."""


def cancelled_meanwhile() -> None:
    """Raise CancelledError in a task that was cancelled and did not hear of it."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def end(task: asyncio.Task[object] | asyncio.Task[None]) -> None:
    """Cancel `task` and wait until it has ended, cancelling it again every AGAIN_S while a
    cancellation goes unheard. Its CancelledError is not raised here; its other errors are."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=AGAIN_S)
    with contextlib.suppress(asyncio.CancelledError):
        task.result()
