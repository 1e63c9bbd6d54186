"""The public API's cost: calls through a node against the same work done in-process.

    .venv/bin/python benchmarks/api_bench.py [--calls 2000] [--concurrency 16]

Starts etcd and Postgres (fsync on) and one `wheel scheduler` process, makes a
tenant and a token, then times, at the same concurrency:

- create: a cron job per call, through the SDK (`AsyncClient.create_job`:
  bearer auth, validation, the schedule resolved, 5 next runs previewed) and,
  as the baseline, `register_job` on the store from this process (the same
  validation and insert, no gRPC, no auth, no preview);
- get: `get_job` through the SDK against `store.jobs.get` in-process;
- list: `list_executions` (a page of 100) against `store.executions.list`;
- explain: `explain_execution` of a backfilled run (no in-process baseline:
  it is only an API).

Both sides have 4 Postgres connections (the node's `api_pool_size`). The
ratio says what the API adds per call on this machine (gRPC, auth, the
conversions, and a second Python process in the path).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.e2e.cluster import Cluster

import wheel
from wheel import eventloop
from wheel.api.server.registration import register_job
from wheel.local import LocalServices
from wheel.local.ports import free_port
from wheel.model.jobs import JobSpec
from wheel.store import Store, migrate

PARTITIONS = 64


async def timed(
    calls: int, concurrency: int, call: Callable[[int], Awaitable[object]]
) -> dict[str, float]:
    """`calls` calls, `concurrency` at a time: calls/s and latency percentiles in ms."""
    latencies: list[float] = []
    queue = iter(range(calls))

    async def worker() -> None:
        for n in queue:
            started = time.perf_counter()
            await call(n)
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "per_s": calls / elapsed,
        "p50": statistics.median(latencies),
        "p99": latencies[int(len(latencies) * 0.99) - 1],
    }


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="wheel-api-bench-"))
    os.chmod(root, 0o755)  # Postgres's user must reach its data dir
    services = LocalServices.start(root, durable=True)
    cluster: Cluster | None = None
    try:
        dsn = services.postgres.dsn()
        await migrate(dsn)
        (root / "logs").mkdir()
        cluster = Cluster(dsn, services.etcd.port, "api-bench", logs=root / "logs")
        address = f"127.0.0.1:{free_port()}"
        cluster.start_node("node-0", partitions=PARTITIONS, listen=address)
        await cluster.ready(within=120, partitions=PARTITIONS)
        # As many connections as the node's API pool (api_pool_size): the same footing.
        store = await Store.open(dsn, max_size=4)
        tenant = await store.tenants.create("bench")
        _, token = await store.tenants.create_token(tenant.id, "bench")
        schedule = wheel.cron("H H * * *", "Europe/London")
        rows: list[tuple[str, dict[str, float], dict[str, float] | None]] = []
        n, c = args.calls, args.concurrency
        async with wheel.AsyncClient(address, token=token) as client:
            await client.create_job("warm-up", "noop", schedule)
            api_create = await timed(
                n, c, lambda i: client.create_job(f"api-{i}", "noop", schedule)
            )
            direct = await timed(
                n,
                c,
                lambda i: register_job(
                    store,
                    tenant.id,
                    JobSpec(f"direct-{i}", "noop", schedule),
                    partitions=PARTITIONS,
                ),
            )
            rows.append(("create a cron job", api_create, direct))

            job = (await client.create_job("history", "noop", wheel.cron("0 * * * *"))).job
            end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
            made = await client.backfill_job(job.id, end - timedelta(hours=200), end)
            rows.append(
                (
                    "get a job",
                    await timed(n, c, lambda i: client.get_job(job.id)),
                    await timed(n, c, lambda i: store.jobs.get(tenant.id, job.id)),
                )
            )
            rows.append(
                (
                    "list 100 executions",
                    await timed(n, c, lambda i: client.list_executions(job_id=job.id)),
                    await timed(n, c, lambda i: store.executions.list(tenant.id, job_id=job.id)),
                )
            )
            ident = made.created_ids[0]
            rows.append(
                (
                    "explain a run",
                    await timed(n, c, lambda i: client.explain_execution(ident)),
                    None,
                )
            )
        await store.close()
        print(f"\n{n} calls each, {c} at a time; one node process, durable Postgres\n")
        print("| call | API calls/s | API p50 ms | API p99 ms | in-process calls/s "
              "| in-process p50 ms | API / in-process time |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, api, local in rows:
            if local is None:
                print(f"| {name} | {api['per_s']:,.0f} | {api['p50']:.2f} | {api['p99']:.2f} "
                      "| - | - | - |")  # fmt: skip
                continue
            print(
                f"| {name} | {api['per_s']:,.0f} | {api['p50']:.2f} | {api['p99']:.2f} "
                f"| {local['per_s']:,.0f} | {local['p50']:.2f} "
                f"| {local['per_s'] / api['per_s']:.1f}x |"
            )
    finally:
        if cluster is not None:
            cluster.stop()
        services.stop()
        shutil.rmtree(root, ignore_errors=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    return parser.parse_args()


if __name__ == "__main__":
    eventloop.run(main(parse()))
