"""The example tasks `wheel dev`'s executor runs (`wheel executor --tasks wheel.dev.tasks`).

Three handlers, one per thing worth seeing in the live view: one that
succeeds at once, one that takes a moment (so `running` shows) and one that
always fails (so retries with backoff, then `dead`, show). Their names are
prefixed `example.` so they never collide with a user's own task types when
`wheel dev --tasks myapp.tasks` loads both.
"""

from __future__ import annotations

import logging

import wheel
from wheel.dev.examples import FAIL, HELLO, TICK

log = logging.getLogger(__name__)

TICK_WORK_S = 0.5
"""How long a tick pretends to work: long enough to be seen `running`."""


@wheel.task(HELLO)
def hello(ctx: wheel.TaskContext) -> None:
    """Say hello in the executor's log, with the idempotency key every attempt shares."""
    log.info(
        "example.hello",
        extra={"execution": ctx.execution_id, "attempt": ctx.attempt, "payload": ctx.payload},
    )


@wheel.task(TICK)
def tick(ctx: wheel.TaskContext) -> None:
    """Work for TICK_WORK_S (sooner if cancelled), heartbeating once on the way."""
    ctx.heartbeat()
    ctx.cancel_event.wait(TICK_WORK_S)


@wheel.task(FAIL)
def fail(ctx: wheel.TaskContext) -> None:
    """Fail every attempt: the job retries with backoff until its attempts run out (dead)."""
    raise RuntimeError(f"example failure on attempt {ctx.attempt}")
