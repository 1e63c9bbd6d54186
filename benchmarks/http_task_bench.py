"""HTTP tasks against executor tasks: the same one-off runs, fired by the same node process.

    PYTHONPATH=. .venv/bin/python benchmarks/http_task_bench.py [--runs 2000] [--over-s 2]

Starts a durable Postgres and etcd, one `wheel scheduler` process and one
`wheel executor` (16 slots), and a local aiohttp server that answers 200 at
once. It registers `--runs` one-off jobs due over `--over-s` seconds, first
as HTTP tasks POSTed by the node's runner, then as a no-op Python task, and
prints each kind's lateness (started_at - scheduled_for, from Postgres) and
how long the batch took from its first instant to its last success.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web
from tests.e2e.cluster import Cluster

from wheel import eventloop
from wheel.api.server.registration import register_jobs
from wheel.local import LocalServices
from wheel.local.ports import free_port
from wheel.model.http_tasks import HttpTask
from wheel.model.ids import TenantId
from wheel.model.jobs import JobSpec, Policies, Schedule, ScheduleKind
from wheel.store import Store, migrate

PARTITIONS = 16


async def receiver() -> tuple[web.AppRunner, str]:
    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/run", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/run"


async def fire(
    store: Store, cluster: Cluster, tenant: TenantId, kind: str, url: str, runs: int, over_s: float
) -> dict[str, float]:
    start = datetime.now(UTC) + timedelta(seconds=3)
    target = HttpTask(url) if kind == "http" else None
    specs = [
        JobSpec(f"{kind}-{n}", target.task_type if target else "noop",
                Schedule(kind=ScheduleKind.AT, at=start + timedelta(seconds=over_s * n / runs)),
                policies=Policies(max_attempts=1), http=target)
        for n in range(runs)
    ]  # fmt: skip
    registered = await register_jobs(store, tenant, specs, partitions=PARTITIONS)
    ids = [r.job.id for r in registered.registered]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = cluster.query(
            "SELECT count(*) FROM executions WHERE job_id = ANY(%s) AND status = 'succeeded'", ids
        )[0][0]
        if done == runs:
            break
        await asyncio.sleep(0.2)  # polling Postgres: the processes work on their own
    rows = cluster.query(
        "SELECT extract(epoch FROM started_at - scheduled_for) * 1000,"
        " extract(epoch FROM finished_at) FROM executions"
        " WHERE job_id = ANY(%s) AND status = 'succeeded'",
        ids,
    )
    late = sorted(float(r[0]) for r in rows)
    if not late:
        return {"done": 0.0}
    return {
        "done": float(len(late)),
        "p50": statistics.median(late),
        "p99": late[max(0, int(len(late) * 0.99) - 1)],
        "max": late[-1],
        "took_s": max(float(r[1]) for r in rows) - start.timestamp(),
    }


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="wheel-http-bench-"))
    os.chmod(root, 0o755)  # Postgres's user must reach its data dir
    services = LocalServices.start(root, durable=True)
    cluster: Cluster | None = None
    server, url = await receiver()
    try:
        dsn = services.postgres.dsn()
        await migrate(dsn)
        (root / "logs").mkdir()
        cluster = Cluster(dsn, services.etcd.port, "http-bench", logs=root / "logs")
        cluster.start_node("node-0", partitions=PARTITIONS, listen=f"127.0.0.1:{free_port()}")
        cluster.start_executor("executor-0")
        await cluster.ready(within=120, partitions=PARTITIONS)
        store = await Store.open(dsn, max_size=2)
        tenant = (await store.tenants.create("bench", max_in_flight=100_000)).id
        results = {
            kind: await fire(store, cluster, tenant, kind, url, args.runs, args.over_s)
            for kind in ("http", "executor")
        }
        await store.close()
        print(f"\n{args.runs} one-off runs due over {args.over_s:g} s; one node process, "
              "durable Postgres; HTTP tasks to a local server answering 200\n")  # fmt: skip
        print("| task | done | lateness p50 ms | p99 ms | max ms | first instant to last done s |")
        print("|---|---:|---:|---:|---:|---:|")
        for kind, r in results.items():
            if not r["done"]:
                print(f"| {kind} | 0 | - | - | - | - |")
                continue
            print(f"| {kind} | {r['done']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} "
                  f"| {r['max']:.1f} | {r['took_s']:.2f} |")  # fmt: skip
    finally:
        await server.cleanup()
        if cluster is not None:
            cluster.stop()
        services.stop()
        shutil.rmtree(root, ignore_errors=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--over-s", type=float, default=2.0)
    return parser.parse_args()


if __name__ == "__main__":
    eventloop.run(main(parse()))
