"""etcd killed and restarted on its data, again and again, under three members: every
partition is owned again within a bound after each restart, never by two at once."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import signal
import uuid
from concurrent.futures import ThreadPoolExecutor

from tests.integration.coordinator.harness import Ledger, until_settled
from tests.services import service_data_root
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.coordinator.membership import Membership
from wheel.local import EtcdServer
from wheel.model.ids import PartitionId

PARTITIONS = 32
NODES = ("node-a", "node-b", "node-c")
RESTARTS = 4
DOWN_S = (0.5, 2.0, 3.5, 1.0)
"""How long etcd stays dead each time: the fault, not a wait for anything."""
OWNED_AGAIN_S = 30.0


def member(etcd: Etcd, layout: Layout, name: str, ledger: Ledger) -> Membership:
    async def acquired(partition: PartitionId, epoch: int) -> bool:
        ledger.acquired(name, partition, epoch)
        return True

    async def released(partition: PartitionId) -> None:
        ledger.released(name, partition)

    return Membership(etcd, layout, name, ttl_s=2, on_acquired=acquired,
                      on_released=released, default_partitions=PARTITIONS)  # fmt: skip


async def test_every_partition_is_owned_again_after_each_etcd_restart() -> None:
    root = service_data_root()
    spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="etcd")
    server = await asyncio.get_running_loop().run_in_executor(
        spawner, functools.partial(EtcdServer.start, root / "etcd", durable=False)
    )
    layout = Layout(f"restart-{uuid.uuid4().hex[:8]}")
    ledger = Ledger()
    clients: list[Etcd] = []
    running: list[asyncio.Task[None]] = []
    try:
        for name in NODES:
            etcd = await Etcd.connect(server.endpoint, timeout_s=2)
            clients.append(etcd)
            running.append(asyncio.create_task(member(etcd, layout, name, ledger).run()))
        await asyncio.wait_for(until_settled(ledger, NODES, PARTITIONS), OWNED_AGAIN_S)
        for down_s in DOWN_S[:RESTARTS]:
            server.process.send_signal(signal.SIGKILL)
            server.process.wait()
            await asyncio.sleep(down_s)
            # Started off the event loop (the members must live on while etcd starts), by
            # one thread that outlives it: etcd dies with the thread that spawned it.
            server = await asyncio.get_running_loop().run_in_executor(
                spawner,
                functools.partial(
                    EtcdServer.start,
                    server.data_dir, port=server.port, peer_port=server.peer_port, durable=False,
                ),
            )  # fmt: skip
            try:
                await asyncio.wait_for(until_settled(ledger, NODES, PARTITIONS), OWNED_AGAIN_S)
            except TimeoutError:
                missing = sorted(set(range(PARTITIONS)) - set(ledger.holder))
                raise AssertionError(
                    f"{len(missing)} of {PARTITIONS} partitions unowned {OWNED_AGAIN_S} s after"
                    f" etcd came back (down {down_s} s): {missing}"
                ) from None
        # Ownership only ever moved forward: every epoch a partition got is newer.
        assert all(e == sorted(set(e)) for e in ledger.epochs.values())
    finally:
        for task in running:
            task.cancel()
        for task in running:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for etcd in clients:
            await etcd.close()
        server.stop()
        spawner.shutdown()
        shutil.rmtree(root, ignore_errors=True)
