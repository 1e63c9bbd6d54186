"""A small cluster of ownership nodes for tests, and a ledger that fails on a double owner."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from wheel.coordinator.assignment import Holder, assign
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout, encode
from wheel.coordinator.membership import Membership
from wheel.coordinator.ownership import Ownership, partition_count
from wheel.coordinator.session import Session
from wheel.model.ids import PartitionId

PARTITIONS = 32
TTL_S = 1
SLACK_S = 4.0


@dataclass
class Ledger:
    """Who believes they own what, from the nodes' own callbacks; fails on a double owner."""

    holder: dict[PartitionId, str] = field(default_factory=dict)
    epochs: dict[PartitionId, list[int]] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def acquired(self, node: str, partition: PartitionId, epoch: int) -> None:
        assert partition not in self.holder, (
            f"{node} acquired {partition} while {self.holder[partition]} holds it"
        )
        self.holder[partition] = node
        self.epochs.setdefault(partition, []).append(epoch)
        self._changed()

    def released(self, node: str, partition: PartitionId) -> None:
        assert self.holder.pop(partition) == node
        self._changed()

    def _changed(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class Node:
    def __init__(self, endpoint: str, layout: Layout, name: str, ledger: Ledger) -> None:
        self.endpoint, self.layout, self.name, self.ledger = endpoint, layout, name, ledger

    async def start(self) -> None:
        self.etcd = await Etcd.connect(self.endpoint)
        self.session = await Session.open(self.etcd, ttl_s=TTL_S)
        count = await partition_count(self.etcd, self.layout, default=PARTITIONS)

        async def acquired(partition: PartitionId, epoch: int) -> bool:
            self.ledger.acquired(self.name, partition, epoch)
            return True

        async def released(partition: PartitionId) -> None:
            self.ledger.released(self.name, partition)

        self.ownership = Ownership(
            self.etcd, self.layout, self.name, partitions=count, session=self.session,
            on_acquired=acquired, on_released=released,
        )  # fmt: skip
        await self.ownership.start()

    async def stop(self) -> None:
        await self.ownership.stop(hand_over=True)
        await self.session.close()
        await self.etcd.close()

    async def crash(self) -> None:
        """Gone without cleanup: no hand-over, no revoke; its lease runs out in etcd."""
        await self.ownership.stop(hand_over=False)  # it is dead: it believes nothing
        self.session._task.cancel()  # type: ignore[union-attr]
        with contextlib.suppress(asyncio.CancelledError):
            await self.session._task  # type: ignore[misc]
        await self.etcd.close()


def settled(ledger: Ledger, names: Sequence[str], count: int = PARTITIONS) -> bool:
    """Every partition held, and held as the assignment says it should be: each node at its
    quota, nothing left to move."""
    holders = {p: Holder(n, ledger.epochs[p][-1]) for p, n in ledger.holder.items()}
    return len(holders) == count and assign(names, holders, count) == ledger.holder


async def until_settled(ledger: Ledger, names: Sequence[str], count: int = PARTITIONS) -> None:
    while not settled(ledger, names, count):
        await ledger.changed.wait()


async def converged(ledger: Ledger, nodes: list[Node]) -> None:
    """Until every partition is held as the assignment says among `nodes`."""
    await until_settled(ledger, [n.name for n in nodes])


MEMBER_PARTITIONS = 16
"""The partitions of the single-member tests (test_membership, test_restart_departure)."""


async def owned_by(ledger: Ledger, expected: dict[PartitionId, str]) -> None:
    while ledger.holder != expected:
        await ledger.changed.wait()


async def leftovers(etcd: Etcd, layout: Layout, lease: int) -> None:
    """What a node-a killed outright leaves: its node key and its partitions, under its lease."""
    await etcd.put(layout.node("node-a"), encode({"node": "node-a"}), lease=lease)
    for partition in range(MEMBER_PARTITIONS):
        key = layout.partition(PartitionId(partition))
        await etcd.put(key, encode({"node": "node-a"}), lease=lease)


def member_a(etcd: Etcd, layout: Layout, ledger: Ledger) -> Membership:
    async def acquired(partition: PartitionId, epoch: int) -> bool:
        ledger.acquired("node-a", partition, epoch)
        return True

    async def released(partition: PartitionId) -> None:
        ledger.released("node-a", partition)

    return Membership(etcd, layout, "node-a", ttl_s=3, on_acquired=acquired,
                      on_released=released, default_partitions=MEMBER_PARTITIONS)  # fmt: skip
