"""After a full restart of node, executor and etcd: when the node says SERVING, and how long
run-now jobs made from then on wait to start.

    PYTHONPATH=. .venv/bin/python benchmarks/full_restart_bench.py [--ttl 10]

One `wheel scheduler` and one `wheel executor` against a durable etcd and a Postgres;
all three are SIGKILLed, etcd is restarted on its data (which renews every lease), then
the node and the executor. Four run-now jobs are made every half second for 30 s from the
moment the node says SERVING; prints the longest wait (creation to start) per 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import shutil
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tests.e2e.cluster import Cluster
from tests.e2e.runs import jobs
from tests.services import service_data_root

from wheel import eventloop
from wheel.local import EtcdServer, PostgresServer
from wheel.store import Store, migrate


async def until_serving(address: str) -> None:
    """Return once the node's gRPC health says SERVING (what a readiness probe waits for)."""
    while True:
        try:
            async with grpc.aio.insecure_channel(address) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                async for reply in stub.Watch(health_pb2.HealthCheckRequest()):
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.1)  # not listening yet: its start is another process's


async def main(ttl_s: int) -> None:
    root, spawner = service_data_root(), ThreadPoolExecutor(1)  # servers die with their thread
    loop = asyncio.get_running_loop()
    etcd = await loop.run_in_executor(spawner, functools.partial(EtcdServer.start, root / "etcd"))
    start_postgres = functools.partial(PostgresServer.start, root / "pg", durable=False)
    postgres = await loop.run_in_executor(spawner, start_postgres)
    postgres.ensure_database("wheel")
    dsn = postgres.dsn("wheel")
    await migrate(dsn)
    store = await Store.open(dsn)
    cluster = Cluster(dsn, etcd.port, "restart")
    try:
        tenant = (await store.tenants.create("restart")).id
        node = cluster.start_node("node-0", session_ttl_s=ttl_s, lease_s=30,
                                  heartbeat_interval_s=5, prefetch_ms=5000)  # fmt: skip
        executor = cluster.start_executor("executor-0")
        await cluster.ready()
        for process in (executor, node):
            process.signal(signal.SIGKILL)
            assert process.popen is not None
            process.popen.wait()
        etcd.process.send_signal(signal.SIGKILL)
        etcd.process.wait()
        began = time.monotonic()
        restart = functools.partial(EtcdServer.start, etcd.data_dir, port=etcd.port,
                                    peer_port=etcd.peer_port)  # fmt: skip
        etcd = await loop.run_in_executor(spawner, restart)
        node.start()
        executor.start()
        await until_serving(node.address)
        print(
            f"session TTL {ttl_s} s: node SERVING {time.monotonic() - began:.2f} s after the kill"
        )
        made: list[tuple[float, object]] = []
        for _ in range(60):
            batch = await jobs(store, tenant, "noop", [datetime.now(UTC)] * 4)
            made += [(time.monotonic() - began, job.id) for job in batch]
            await asyncio.sleep(0.5)  # the offered rate
        await asyncio.sleep(10)  # the last ones finish
        rows = cluster.query(
            "SELECT job_id, extract(epoch FROM started_at - created_at) FROM executions"
            " WHERE job_id = ANY(%s)",
            [job_id for _, job_id in made],
        )
        waited = {row[0]: row[1] for row in rows}
        print(f"{'made at s':>10} {'longest wait s':>15} {'not started':>12}")
        for second in range(0, 30, 2):
            window = [job for at, job in made if second <= at < second + 2]
            started = [float(waited[job]) for job in window if waited.get(job) is not None]
            longest = f"{max(started):.2f}" if started else "-"
            print(f"{second:>4}-{second + 2:<5} {longest:>15} {len(window) - len(started):>12}")
    finally:
        cluster.stop()
        await store.close()
        await loop.run_in_executor(spawner, postgres.stop)
        await loop.run_in_executor(spawner, etcd.stop)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ttl", type=int, default=10, help="the nodes' session TTL (s)")
    eventloop.run(main(parser.parse_args().ttl))
