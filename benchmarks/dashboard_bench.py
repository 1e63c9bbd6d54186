"""How long the dashboard's pages take with 100,000 runs in the database.

    PYTHONPATH=. .venv/bin/python benchmarks/dashboard_bench.py [--runs 100000] [--loads 20]

Starts etcd and Postgres (fsync on) and one `wheel scheduler` process serving
the dashboard, makes a tenant with 20 jobs and `--runs` runs spread over them
(a tenth of them dead), signs in over HTTP as a browser does, and times each
page `--loads` times: the median and the worst, beside the one API call the
page's list rests on (what rendering and the names' lookups add).
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

import aiohttp
import psycopg
from tests.e2e.cluster import Cluster

import wheel
from wheel.local import LocalServices
from wheel.local.ports import free_port
from wheel.model.executions import ExecutionStatus, NewOccurrence
from wheel.model.ids import ExecutionKey
from wheel.store import Store, migrate

PARTITIONS = 16
JOBS = 20


async def timed(loads: int, call: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    took = []
    for _ in range(loads):
        began = time.perf_counter()
        await call()
        took.append((time.perf_counter() - began) * 1000)
    return statistics.median(took), max(took)


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="wheel-dashboard-bench-"))
    os.chmod(root, 0o755)
    services = LocalServices.start(root, durable=True)
    cluster: Cluster | None = None
    try:
        dsn = services.postgres.dsn()
        await migrate(dsn)
        (root / "logs").mkdir()
        cluster = Cluster(dsn, services.etcd.port, "dashboard-bench", logs=root / "logs")
        api, web = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
        cluster.start_node("node-0", partitions=PARTITIONS, listen=api, http_listen=web)
        await cluster.ready(within=120, partitions=PARTITIONS)
        store = await Store.open(dsn, max_size=2)
        tenant = await store.tenants.create("bench")
        _, token = await store.tenants.create_token(tenant.id, "bench")
        await store.close()
        async with wheel.AsyncClient(api, token=token) as client:
            jobs = [
                (await client.create_job(f"job-{n}", "noop", wheel.cron("0 3 * * *"))).job
                for n in range(JOBS)
            ]
            await client.pause_job(jobs[0].id)  # keeps the cluster quiet; pages do not care
            start = datetime.now(UTC) - timedelta(days=60)
            per_job = args.runs // JOBS
            # Runs are written through the store's own insert (day partitions made as needed).
            store = await Store.open(dsn, max_size=2)

            for job in jobs:
                stored = await store.jobs.get(tenant.id, job.id)
                occurrences = [
                    NewOccurrence(
                        ExecutionKey(job.id, start + timedelta(seconds=30 * i)), tenant.id,
                        stored.partition, 1, start + timedelta(seconds=30 * i),
                    )
                    for i in range(per_job)
                ]  # fmt: skip
                for chunk in range(0, len(occurrences), 5000):
                    await store.occurrences.insert(occurrences[chunk : chunk + 5000])
            await store.close()
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(
                    "UPDATE executions SET status = CASE WHEN random() < 0.1 THEN 'dead'"
                    " ELSE 'succeeded' END::wheel_execution_status, attempt = 1,"
                    " started_at = scheduled_for + interval '5 ms',"
                    " finished_at = scheduled_for + interval '40 ms' WHERE tenant_id = %s",
                    (tenant.id,),
                )
                conn.execute("ANALYZE executions")
            jar = aiohttp.CookieJar(unsafe=True)  # a cookie for an IP address, as browsers keep
            async with aiohttp.ClientSession(f"http://{web}", cookie_jar=jar) as browser:
                async with browser.get("/signin") as page:
                    await page.read()
                async with browser.post("/signin", data={"token": token}) as page:
                    await page.read()
                    assert page.url.path == "/jobs", page.url

                def get(path: str) -> Callable[[], Awaitable[object]]:
                    async def load() -> None:
                        async with browser.get(path) as page:
                            assert page.status == 200, (path, page.status)
                            await page.read()

                    return load

                one = (await client.list_executions(page_size=1)).items[0]
                rows = [
                    ("/jobs", get("/jobs"), lambda: client.list_jobs(page_size=50, with_runs=True)),
                    ("/runs", get("/runs"), lambda: client.list_executions(page_size=50)),
                    ("/runs?status=dead", get("/runs?status=dead"),
                     lambda: client.list_executions(statuses=[ExecutionStatus.DEAD], page_size=50)),
                    ("/queue", get("/queue"), lambda: client.list_executions(
                        statuses=[ExecutionStatus.DEAD, ExecutionStatus.NEEDS_REVIEW],
                        page_size=50)),
                    ("/runs/<id>", get(f"/runs/{one.id}"),
                     lambda: client.explain_execution(one.id)),
                    ("/cluster", get("/cluster"), lambda: client.partitions()),
                ]  # fmt: skip
                print(f"dashboard pages with {per_job * JOBS:,} runs ({JOBS} jobs), "
                      f"{args.loads} loads each, ms")  # fmt: skip
                print(f"{'page':<20}{'median':>9}{'worst':>9}{'its API call':>14}{'ratio':>8}")
                for name, page_load, api_call in rows:
                    median, worst = await timed(args.loads, page_load)
                    api_median, _ = await timed(args.loads, api_call)
                    print(f"{name:<20}{median:>9.1f}{worst:>9.1f}{api_median:>14.1f}"
                          f"{median / api_median:>7.1f}x")  # fmt: skip
    finally:
        if cluster is not None:
            cluster.stop()
        services.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=20)
    asyncio.run(main(parser.parse_args()))
