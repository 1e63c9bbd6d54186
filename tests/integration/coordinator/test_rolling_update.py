"""A rolling update as a StatefulSet does it, counting every partition move in etcd.

Three scheduler nodes (in-process, real etcd and Postgres) are restarted one at a time,
highest ordinal first: stop (a SIGTERM: the node hands its partitions over), start again
with the same node id, wait until it serves (the readiness probe), then the next. A watch
of the test's own on `partitions/` records every owner change as etcd made it
(`moves.py`). Run with `-s` to see the figures.

Each restart must move each partition at most once: the stopped pod's partitions go to
the others, and the pod, back, is given what the others have held longest, not its own
back (`wheel.coordinator.assignment`); and the nodes end balanced within one partition.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from dataclasses import dataclass

import psycopg
import pytest

from tests.integration.coordinator.moves import MoveLog
from tests.integration.nodes import NodeFactory, fast_config
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.local import LocalServices
from wheel.model.ids import PartitionId
from wheel.scheduler.node import SchedulerNode

N = 3
PARTITIONS = 64
SESSION_TTL_S = fast_config()["session_ttl_s"]
PROBE_S = 0.05
"""How often readiness is asked (a kubelet asks every few seconds: this is the strict case)."""
QUIET_S = 1.5
"""No partition key changing for this long, every partition owned: the cluster has settled."""


def pod(ordinal: int) -> str:
    return f"wheel-scheduler-{ordinal}"


async def serving(node: SchedulerNode, within_s: float = 30.0) -> float:
    """Wait until the node serves, as a readiness probe would see it; how long that took."""
    began = time.monotonic()
    async with asyncio.timeout(within_s):
        while True:
            if node.serving():
                break
            await asyncio.sleep(PROBE_S)  # a probe polls: "serving" has no event
    return time.monotonic() - began


async def settled(log: MoveLog, nodes: dict[str, SchedulerNode], within_s: float = 30.0) -> None:
    """Every partition held by a live node, and nothing changing for QUIET_S."""
    async with asyncio.timeout(within_s):
        while True:
            held = log.holders()
            if len(held) == PARTITIONS and set(held.values()) <= set(nodes):
                try:
                    await asyncio.wait_for(log.changed.wait(), QUIET_S)
                except TimeoutError:
                    return
            else:
                await log.changed.wait()


@dataclass
class Phase:
    """One restarted pod: from its stop to the next pod's stop (or the end)."""

    pod: str
    began: int
    ended: int = 0
    left: frozenset[PartitionId] = frozenset()
    """What the pod held when it was stopped."""
    held_when_ready: int = 0
    ready_after_s: float = 0.0


def _spans(spans: list[float]) -> str:
    if not spans:
        return "never"
    return (
        f"{len(spans)} times, median {statistics.median(spans) * 1000:.0f} ms,"
        f" max {max(spans) * 1000:.0f} ms"
    )


def report(log: MoveLog, phases: list[Phase], final: dict[PartitionId, str]) -> str:
    """The figures, one line per restarted pod and one for the whole update."""
    lines = []
    everyone = [PartitionId(p) for p in range(PARTITIONS)]
    for phase in phases:
        moved = log.moves(phase.began, phase.ended)
        again = log.reacquired(phase.began, phase.ended)
        gaps = log.unowned(phase.began, phase.ended)
        own = [p for p in everyone if p in phase.left]
        others = [p for p in everyone if p not in phase.left]
        lines.append(
            f"{phase.pod} (held {len(own)}): moves per partition, its own"
            f" {sorted(Counter(moved[p] for p in own).items())}, the others'"
            f" {sorted(Counter(moved[p] for p in others).items())};"
            f" taken again by their last holder {sum(again.values())};"
            f" its own unowned {_spans([s for p in own for s in gaps.get(p, [])])};"
            f" the others' unowned {_spans([s for p in others for s in gaps.get(p, [])])};"
            f" ready {phase.ready_after_s:.2f} s after its start, holding {phase.held_when_ready}"
        )
    total = log.moves(phases[0].began)
    per_node = dict(sorted(Counter(final.values()).items()))
    lines.append(
        f"whole update: moves per partition {sorted(Counter(total[p] for p in everyone).items())}"
        f" (total {sum(total.values())}); held at the end {per_node}"
    )
    return "\n".join(lines)


@pytest.mark.timeout(180)
async def test_a_rolling_update_moves_each_partition_at_most_once_per_restarted_pod(
    start_node: NodeFactory, local_services: LocalServices, cluster: str, database_dsn: str
) -> None:
    nodes = {pod(n): await start_node(pod(n), partitions=PARTITIONS) for n in range(N)}
    for node in nodes.values():
        await serving(node)
    etcd = await Etcd.connect(local_services.etcd.endpoint)
    log = MoveLog(etcd, Layout(cluster))
    await log.start()
    try:
        await settled(log, nodes)
        phases = []
        for ordinal in reversed(range(N)):
            name = pod(ordinal)
            phase = Phase(name, log.mark())
            phase.left = frozenset(p for p, n in log.holders().items() if n == name)
            await nodes[name].stop()  # SIGTERM: hands every partition over, then exits
            nodes[name] = await start_node(name, partitions=PARTITIONS)  # same pod name
            phase.ready_after_s = await serving(nodes[name])
            ownership = nodes[name].membership.ownership  # type: ignore[union-attr]
            phase.held_when_ready = len(ownership.held) if ownership is not None else 0
            phases.append(phase)
        await settled(log, nodes)
        for phase, after in zip(phases, [*phases[1:], None], strict=True):
            phase.ended = after.began if after is not None else log.mark()
        final = log.holders()
        print("\n" + report(log, phases, final))

        # Fencing: every acquisition in etcd reached Postgres as the partition's epoch.
        async with await psycopg.AsyncConnection.connect(database_dsn) as conn:
            query = "SELECT partition, epoch FROM partition_epochs"
            rows = await (await conn.execute(query)).fetchall()
        epochs = {PartitionId(p): e for p, e in rows}
        last_epoch = {c.partition: c.epoch for c in log.changes if c.node is not None}
        assert all(epochs[p] == e for p, e in last_epoch.items()), "Postgres has every epoch"
        for phase in phases:
            moved = log.moves(phase.began, phase.ended)
            assert max(moved.values(), default=0) <= 1, f"restarting {phase.pod}: {moved}"
            # Ready with its share, so the next pod stops only once this one carries load.
            assert phase.held_when_ready >= PARTITIONS // N, phase
        # Not a timing test: a gross bound. A hand-over as slow as a crash (the session
        # TTL) would mean the partitions waited for a lease to run out.
        gaps = [s for spans in log.unowned(phases[0].began).values() for s in spans]
        assert max(gaps) < SESSION_TTL_S, f"a partition was unowned {max(gaps):.1f} s"
        # Balanced after the update: each node holds ⌊P/N⌋ or ⌈P/N⌉.
        counts = Counter(final.values())
        assert len(final) == PARTITIONS
        assert sorted(counts) == sorted(nodes)
        assert max(counts.values()) - min(counts.values()) <= 1, counts
    finally:
        await log.stop()
        await etcd.close()
