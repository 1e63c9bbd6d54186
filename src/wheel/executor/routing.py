"""Router: which live stream a heartbeat or a result goes on.

In order: the stream the execution was dispatched on, while it is up; else
the stream of the node that owns the execution's partition now; else any
live stream (the first by node id, so the choice is stable). Any node can
record any result or heartbeat — the store checks the fence — so the owner
is a preference, not a requirement.
"""

from __future__ import annotations

from collections.abc import Callable

from wheel.executor.connection import Stream
from wheel.model.ids import JobId


def _no_owner(_job_id: JobId) -> str | None:
    return None


class Router:
    def __init__(self, owner_of: Callable[[JobId], str | None] = _no_owner) -> None:
        self._owner_of = owner_of
        self._streams: dict[str, Stream] = {}

    def add(self, stream: Stream) -> None:
        self._streams[stream.node_id] = stream

    def remove(self, stream: Stream) -> None:
        if self._streams.get(stream.node_id) is stream:
            del self._streams[stream.node_id]

    def live(self) -> list[Stream]:
        return [s for _, s in sorted(self._streams.items()) if s.alive]

    def route(self, job_id: JobId | None, prefer: Stream | None = None) -> Stream | None:
        if prefer is not None and prefer.alive:
            return prefer
        if job_id is not None:
            owner = self._owner_of(job_id)
            stream = self._streams.get(owner) if owner is not None else None
            if stream is not None and stream.alive:
                return stream
        live = self.live()
        return live[0] if live else None
