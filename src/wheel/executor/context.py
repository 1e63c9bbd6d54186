"""TaskContext: what a handler knows about the execution it runs, and its two levers.

    def send_report(ctx: TaskContext) -> None:
        for chunk in chunks(ctx.payload):
            if ctx.cancelled:
                return
            upload(chunk, idempotency_key=ctx.execution_id)
            ctx.heartbeat()

`execution_id` is the same on every attempt of one occurrence: use it as the
idempotency key. `heartbeat()` is thread-safe and may be called from a sync
handler's worker thread or from an async handler. Async handlers are
cancelled with `task.cancel()`; sync ones cannot be interrupted, so they
should check `cancelled` or wait on `cancel_event`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from wheel.model.ids import ExecutionId, JobId

_EVENTS = threading.Lock()
"""Guards making a context's cancel event (rare: only a handler that asks for one)."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TaskContext:
    execution_id: ExecutionId
    """`<job uuid>@<YYYYMMDDTHHMMSS.ffffffZ>`: stable across attempts, the idempotency key."""
    job_id: JobId
    task_type: str
    pool: str
    attempt: int
    """1 for the first attempt, then 2, 3, ..."""
    fence: int
    """Grows with every dispatch of this occurrence; a write with an older one is refused."""
    scheduled_for: datetime
    """The instant the occurrence was scheduled for (aware, UTC)."""
    payload: bytes
    deadline: datetime
    """The handler is cancelled and the attempt fails with a timeout at this instant (UTC)."""
    send_heartbeat: Callable[[], None] = field(default=lambda: None, repr=False)
    """Thread-safe: asks the executor to send a heartbeat now (set by the runner)."""
    trace_context: Mapping[str, str] = field(default_factory=dict)
    """W3C trace context headers (`traceparent`) of this attempt's span, to continue the
    trace in what the handler calls: `opentelemetry.propagate.extract(ctx.trace_context)`.
    Empty when neither the node nor the executor traces (wheel.tracing)."""
    # The event is made only for a handler that asks for it: a threading.Event (a
    # Condition and a lock) per run was a tenth of a busy executor's time.
    _event: threading.Event | None = field(default=None, init=False, repr=False)
    _cancelled: bool = field(default=False, init=False, repr=False)

    def heartbeat(self) -> None:
        """Send a heartbeat for this execution now: the lease is extended while we progress."""
        self.send_heartbeat()

    @property
    def cancel_event(self) -> threading.Event:
        """Set when the execution is cancelled (timeout, stale fence, cancel request,
        shutdown): a sync handler can wait on it."""
        event = self._event
        if event is None:
            with _EVENTS:
                event = self._event
                if event is None:
                    event = threading.Event()
                    if self._cancelled:
                        event.set()
                    object.__setattr__(self, "_event", event)  # the facts stay frozen
        return event

    @property
    def cancelled(self) -> bool:
        if self._cancelled:
            return True
        event = self._event
        return event is not None and event.is_set()

    def request_cancel(self) -> None:
        """The executor's side: mark the execution cancelled, waking a waiting handler."""
        with _EVENTS:
            object.__setattr__(self, "_cancelled", True)
            event = self._event
        if event is not None:
            event.set()
