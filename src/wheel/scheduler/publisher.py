"""What a node tells the cluster about itself in etcd, on its session's lease.

Two documents per node, rewritten only when they change and gone with the
node's lease: `breakers/<node>` (task types whose breaker is not closed, and
how many runs are parked; `explain` names them) and `links/<node>` (the
executors streaming to it with their pools, task types and credit, and what
waits here, executors held back, a stalled dispatch and, when its Postgres has
no synchronous standby, why an acknowledged job could be lost; `explain`, job warnings
and `wheel executors` read it). etcd being away skips a write; the next tick
tries again.
"""

from __future__ import annotations

from collections.abc import Mapping

from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout, encode
from wheel.coordinator.session import Session
from wheel.errors import CoordinatorError
from wheel.model.http_tasks import HTTP_POOL
from wheel.scheduler.engine import Engine
from wheel.scheduler.links import Link


class Publisher:
    def __init__(self, etcd: Etcd, layout: Layout, node_id: str) -> None:
        self._etcd = etcd
        self._layout = layout
        self._node_id = node_id
        self._published: dict[str, tuple[int, object]] = {}

    async def breakers(self, engine: Engine, session: Session | None) -> None:
        breakers = engine.snapshot().breakers
        document = {
            "open": {
                task_type: {"state": state, "parked": parked}
                for task_type, (state, parked) in breakers.items()
            }
        }
        await self._publish(f"{self._layout.breakers}{self._node_id}", document, session)

    async def links(
        self, engine: Engine, session: Session | None, durability: str | None = None
    ) -> None:
        """`durability`: why a job this node acknowledges could be lost (None: it cannot)."""
        executors = {
            link.executor_id: {
                "pools": list(link.pools),
                "task_types": list(link.task_types),
                "capacity": link.capacity,
                "credit": dict(sorted(link.credits.items())),
                "slots": link.slots,
                "hold": link.hello.hold,
                "since": link.connected_at.isoformat(timespec="seconds"),
                "in_flight": engine.in_flight.by_link.get(link.serial, 0),
                **_held_back(link),
            }
            for link in sorted(engine.links, key=lambda link: link.executor_id)
        }
        snapshot = engine.snapshot()
        document: dict[str, object] = {
            "executors": executors, "ready": snapshot.ready, "unserved": snapshot.unserved,
        }  # fmt: skip
        if snapshot.stalled is not None:
            document["stalled"] = snapshot.stalled
        if durability is not None:
            document["durability"] = durability
        runner = engine.links.http_runner
        if runner is not None:  # this node runs HTTP tasks (every node does)
            document["http_runner"] = {
                "credit": runner.credits.get(HTTP_POOL, 0),
                "in_flight": engine.in_flight.by_link.get(runner.serial, 0),
            }
        await self._publish(f"{self._layout.links}{self._node_id}", document, session)

    async def _publish(
        self, key: str, document: Mapping[str, object], session: Session | None
    ) -> None:
        """Write `document` at `key` under the session's lease when it changed."""
        if session is None:
            return
        published = (session.lease_id, document)
        if self._published.get(key) == published:
            return
        try:
            await self._etcd.put(key, encode(document), lease=session.lease_id)
        except CoordinatorError:
            return  # etcd is away: the next tick tries again
        self._published[key] = published


def _held_back(link: Link) -> dict[str, object]:
    """Since when the node holds the executor back, and how often it asked it since."""
    if link.held_back_at is None:
        return {}
    return {"held_back_since": link.held_back_at.isoformat(timespec="seconds"),
            "probes": link.probes}  # fmt: skip
