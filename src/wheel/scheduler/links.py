"""The executors connected to this node: one link per stream, with its credit per pool.

A credit is the executor's permission for one more dispatch of a pool on
that stream. The node claims only as many occurrences as the links of a pool
have credit for, and it picks the link for each occurrence before claiming
it: the claim binds the run to that executor process (`binding`), so only it
may report the run, and an occurrence is never claimed — its lease never
starts running — without an executor that serves its task type ready to take
it.

One executor id is one live link: a second stream naming a live id from
another process (another instance id) is refused; the same process
reconnecting replaces its old link.

A link is held back (`hold_back`) when a run's lease lapsed while its
executor had been silent: paused, frozen or cut off. It gets no dispatches
until it says anything again (`heard`). An executor holding nothing has
nothing to say, so the node asks: a held-back link is probed at once, and
every link every probe interval (`probe`); an executor that is there
answers at once. A lease that lapsed
while the executor kept talking is the store's delay, not the executor's,
and holds nothing back.

The node's own HTTP task runner (`scheduler.http_runner`) is a link too, with
no stream: it serves HTTP task types, which no executor serves, and its
credit is in HTTP_POOL, where the node queues every HTTP task's runs. It is
not an executor: iterating the links leaves it out.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from wheel.errors import Conflict
from wheel.model.http_tasks import is_http_task_type
from wheel.scheduler.messages import Hello
from wheel.scheduler.outgoing import Outgoing, Probe
from wheel.store.occurrences import ExecutorBinding
from wheel.timingwheel import Clock, SystemClock

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Link:
    """One executor stream to this node."""

    hello: Hello
    token_id: uuid.UUID
    """The executor token the stream authenticated with."""
    serial: int
    credits: dict[str, int] = field(default_factory=dict)
    outbox: asyncio.Queue[Outgoing | None] = field(default_factory=asyncio.Queue)
    """What the stream writes next (None: end it); the stream makes the protobuf."""
    open: bool = True
    ended_because: str = ""
    """Why the node ended the stream (empty: it ended on its own)."""
    heard_at_s: float = 0.0
    """When it last said anything (monotonic seconds)."""
    held_back_since_s: float | None = None
    """Set while held back: a run's lease lapsed while the executor was silent (paused,
    frozen, cut off). No dispatches until it says anything again."""
    held_back_at: datetime | None = None
    """The same instant on the wall clock (what the node publishes)."""
    probed_at_s: float = 0.0
    probes: int = 0
    """Probes sent since it was held back."""
    connected_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    handler: asyncio.Task[Any] | None = None
    """The task serving its stream (`let_go` ends it when closing does not)."""
    http_runner: bool = False
    """The node's HTTP task runner: HTTP task types only, credit in HTTP_POOL."""

    @property
    def executor_id(self) -> str:
        return self.hello.executor_id

    @property
    def held_back(self) -> bool:
        return self.held_back_since_s is not None

    @property
    def pools(self) -> tuple[str, ...]:
        return self.hello.pools

    @property
    def task_types(self) -> tuple[str, ...]:
        return self.hello.task_types

    @property
    def capacity(self) -> int:
        return self.hello.capacity

    @property
    def slots(self) -> dict[str, int]:
        """Handlers it runs at once, by pool, as its Hello said (empty: it did not)."""
        return dict(self.hello.slots)

    @property
    def binding(self) -> ExecutorBinding:
        """Who the runs dispatched on this link belong to."""
        return ExecutorBinding(self.hello.executor_id, self.hello.instance_id)

    def serves(self, pool: str, task_type: str) -> bool:
        """A Hello with no task types takes any (tools and tests); one with some, only those.
        HTTP tasks go to the node's runner only."""
        if self.http_runner or is_http_task_type(task_type):
            return self.http_runner and is_http_task_type(task_type)
        return pool in self.hello.pools and (
            not self.hello.task_types or task_type in self.hello.task_types
        )

    def send(self, message: Outgoing) -> None:
        if self.open:
            self.outbox.put_nowait(message)

    def close(self, because: str = "") -> None:
        if self.open:
            self.open = False
            self.ended_because = because
            self.outbox.put_nowait(None)

    def let_go(self, because: str, after_s: float) -> None:
        """End the stream: close it, and cancel its handler if it has not ended `after_s`
        later (a write to a frozen peer may never complete)."""
        self.close(because)
        handler = self.handler
        if handler is not None:
            asyncio.get_running_loop().call_later(after_s, _cancel_unless_done, handler)


class Links:
    def __init__(self, *, clock: Clock | None = None) -> None:
        """`clock` times silences and probes (the system's by default)."""
        self._clock: Clock = clock or SystemClock()
        self._links: dict[int, Link] = {}
        self._by_executor: dict[str, Link] = {}
        self._serial = itertools.count(1)
        self._turn = itertools.count()
        self.changed = asyncio.Event()
        """Set when credit arrives or links come and go (the dispatcher waits on it)."""
        self.generation = 0
        """Grows whenever a link comes or goes: what executors serve may have changed."""
        self._pool_since_ms: dict[str, int] = {}
        """By pool: since when (wall ms) some link has offered it without a break."""

    def connect(self, hello: Hello, token_id: uuid.UUID, *, http_runner: bool = False) -> Link:
        """A link for a welcomed stream; Conflict if another process holds the executor id."""
        live = self._by_executor.get(hello.executor_id)
        if live is not None and live.open:
            if live.hello.instance_id != hello.instance_id or live.token_id != token_id:
                raise Conflict(
                    f"executor id {hello.executor_id!r} is connected to this node from another"
                    " process: executor ids must be unique"
                )
            self.disconnect(live, because="replaced by a new stream from the same executor")
        link = Link(hello, token_id, next(self._serial), http_runner=http_runner)
        link.heard_at_s = self._now_s()
        for pool in link.pools:
            if not any(pool in other.pools for other in self._links.values()):
                self._pool_since_ms[pool] = self._clock.wall_ms()
        self._links[link.serial] = link
        self._by_executor[hello.executor_id] = link
        self.generation += 1
        self.changed.set()
        return link

    def disconnect(self, link: Link, because: str = "") -> None:
        link.close(because)
        if self._links.pop(link.serial, None) is not None:
            self.generation += 1
        if self._by_executor.get(link.executor_id) is link:
            del self._by_executor[link.executor_id]
        self.changed.set()

    def offered_since_ms(self, pool: str) -> int | None:
        """Since when (wall ms) a connected executor has offered the pool without a break;
        None while none does. A run due before then waited for an executor."""
        if not any(pool in link.pools for link in self._links.values()):
            return None
        return self._pool_since_ms.get(pool)

    def grant(self, link: Link, pool: str, count: int) -> None:
        if link.serial in self._links:
            link.credits[pool] = link.credits.get(pool, 0) + count
            self.changed.set()

    def credit(self, pool: str, *, held_back: bool = False) -> int:
        """Dispatches the links allow in the pool now; with `held_back`, also the credit of
        links held back (what the executors have granted, usable or not)."""
        return sum(
            link.credits.get(pool, 0)
            for link in self._links.values()
            if held_back or link.held_back_since_s is None
        )

    def take(self, pool: str, task_type: str) -> Link | None:
        """A link with credit for the pool that serves the task type, spreading dispatches
        across links; uses one credit."""
        candidates = [
            link
            for link in self._links.values()
            if link.credits.get(pool, 0) > 0
            and link.serves(pool, task_type)
            and link.held_back_since_s is None
        ]
        if not candidates:
            return None
        link = candidates[next(self._turn) % len(candidates)]
        link.credits[pool] -= 1
        return link

    # -- silence ---------------------------------------------------------------------------

    def _now_s(self) -> float:
        return self._clock.monotonic_ms() / 1000

    def heard(self, link: Link) -> None:
        """The executor said something: it is alive, whatever a lapsed lease suggested."""
        link.heard_at_s = self._now_s()
        if link.held_back_since_s is not None:
            log.info(
                "engine.executor_heard_again",
                extra={"executor": link.executor_id, "probes": link.probes,
                       "held_back_s": round(link.heard_at_s - link.held_back_since_s, 3)},
            )  # fmt: skip
            link.held_back_since_s, link.held_back_at, link.probes = None, None, 0
            self.changed.set()

    def silent_for_s(self, link: Link) -> float:
        """How long since the executor last said anything."""
        return self._now_s() - link.heard_at_s

    def hold_back(self, link: Link) -> bool:
        """Dispatch nothing more to `link` until it speaks, and ask it at once; False if it
        was held back already."""
        if link.held_back_since_s is not None or not link.open:
            return False
        link.held_back_since_s = self._now_s()
        link.held_back_at = datetime.fromtimestamp(self._clock.wall_ms() / 1000, UTC)
        self._send_probe(link)
        return True

    def probe(self, every_s: float) -> int:
        """Ask every executor whether it is there, once per `every_s`; how many were asked.
        A live one answers at once, and hears from its node at least this often (a stream
        it hears nothing on for a few intervals is dead to it: `executor.connection`)."""
        now_s, asked = self._now_s(), 0
        for link in self._links.values():
            if not link.http_runner and now_s - link.probed_at_s >= every_s:
                self._send_probe(link)
                asked += 1
        return asked

    def silent(self, longer_than_s: float) -> list[Link]:
        """The executors' links that said nothing, probes answered included, for this long."""
        now_s = self._now_s()
        return [link for link in self if now_s - link.heard_at_s > longer_than_s]

    def holding(self, pool: str) -> list[Link]:
        """The links with credit in the pool (held back or not; the HTTP runner included)."""
        return [link for link in self._links.values() if link.credits.get(pool, 0) > 0]

    def held_back(self) -> list[Link]:
        return [link for link in self._links.values() if link.held_back_since_s is not None]

    def _send_probe(self, link: Link) -> None:
        link.probed_at_s = self._now_s()
        link.probes += 1
        link.send(Probe(link.probes))

    def refund(self, link: Link, pool: str) -> None:
        """Give back a credit `take` used for a run that was not claimed after all."""
        self.grant(link, pool, 1)

    def serves(self, pool: str, task_type: str) -> bool:
        """Whether any connected executor serves the task type in the pool (credit or not)."""
        return any(link.serves(pool, task_type) for link in self._links.values())

    def get(self, serial: int) -> Link | None:
        return self._links.get(serial)

    @property
    def http_runner(self) -> Link | None:
        """The node's HTTP task runner's link, while it runs."""
        return next((link for link in self._links.values() if link.http_runner), None)

    def __iter__(self) -> Iterator[Link]:
        """The executors' links (not the node's HTTP runner)."""
        return iter([link for link in self._links.values() if not link.http_runner])

    def __len__(self) -> int:
        return sum(1 for link in self._links.values() if not link.http_runner)

    def close_all(self) -> None:
        for link in list(self._links.values()):
            self.disconnect(link)


def _cancel_unless_done(task: asyncio.Task[Any]) -> None:
    if not task.done():
        task.cancel()
