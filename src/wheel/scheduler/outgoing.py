"""What a node sends an executor, as domain values: dispatches, acknowledgements, refusals,
probes.

The engine and the recorder put these on a link's outbox; the stream turns
them into protobuf as it writes them (`scheduler.messages`), so nothing in
the node's core builds a wire message. A dispatch still queued when its
stream ends never reached the executor: `fences()` says which attempts to
give back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias

from wheel.model.executions import Claimed, Fenced
from wheel.model.ids import ExecutionKey


@dataclass(frozen=True, slots=True)
class Dispatch:
    """A claimed attempt for the executor to start at `start_at` and finish by `deadline`."""

    key: ExecutionKey
    claimed: Claimed
    start_at: datetime
    deadline: datetime
    traceparent: str | None = None
    """The node's dispatch span, when it traces (wheel.tracing)."""


@dataclass(frozen=True, slots=True)
class Dispatches:
    """Attempts handed to one executor in one message."""

    items: tuple[Dispatch, ...]

    def fences(self) -> list[Fenced]:
        return [Fenced(item.key, item.claimed.fence) for item in self.items]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A report refused: stale (with the current fence when known), or from an executor the
    run was not dispatched to (`not_yours`: then nothing about the run is told)."""

    execution_id: str
    fence: int
    not_yours: bool = False
    current_fence: int | None = None


@dataclass(frozen=True, slots=True)
class Acknowledgements:
    """Reports recorded (the executor may forget them) and reports refused as stale."""

    accepted: tuple[Fenced, ...] = ()
    stale: tuple[Refusal, ...] = ()


@dataclass(frozen=True, slots=True)
class Probe:
    """Are you there? Sent to an executor the node holds back; its answer (any message)
    lets dispatches go to it again."""

    nonce: int


Outgoing: TypeAlias = Dispatches | Acknowledgements | Refusal | Probe
