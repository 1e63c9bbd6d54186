"""How long until every partition is owned again after etcd is killed and restarted.

    PYTHONPATH=. .venv/bin/python benchmarks/etcd_restart_recovery.py

Three ownership members (the setup of tests/integration/coordinator/test_etcd_restart.py),
etcd SIGKILLed and restarted on its data eight times; prints, per restart, how long after
etcd answered again every partition was held as the assignment says (balanced, settled).
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import signal
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from tests.conftest import service_data_root
from tests.integration.coordinator.harness import Ledger, until_settled
from tests.integration.coordinator.test_etcd_restart import (
    DOWN_S,
    NODES,
    PARTITIONS,
    member,
)

from wheel import eventloop
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.local import EtcdServer


async def main() -> None:
    root = service_data_root()
    spawner = ThreadPoolExecutor(1)  # etcd dies with the thread that spawned it
    loop = asyncio.get_running_loop()
    start = functools.partial(EtcdServer.start, root / "etcd", durable=False)
    server = await loop.run_in_executor(spawner, start)
    layout, ledger = Layout(f"recovery-{uuid.uuid4().hex[:6]}"), Ledger()
    clients = [await Etcd.connect(server.endpoint, timeout_s=2) for _ in NODES]
    tasks = [
        asyncio.create_task(member(etcd, layout, name, ledger).run())
        for etcd, name in zip(clients, NODES, strict=True)
    ]
    await until_settled(ledger, NODES, PARTITIONS)
    print(f"{'down s':>8} {'owned again after s':>20}")
    for down_s in DOWN_S * 2:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        await asyncio.sleep(down_s)  # the outage
        restart = functools.partial(
            EtcdServer.start, server.data_dir, port=server.port, peer_port=server.peer_port,
            durable=False,
        )  # fmt: skip
        server = await loop.run_in_executor(spawner, restart)
        back = time.monotonic()
        await asyncio.wait_for(until_settled(ledger, NODES, PARTITIONS), 60)
        print(f"{down_s:>8.1f} {time.monotonic() - back:>20.2f}")
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for etcd in clients:
        await etcd.close()
    server.stop()
    spawner.shutdown()
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    eventloop.run(main())
