"""End to end on one machine: scheduler nodes and executors as processes, durable Postgres.

    .venv/bin/python benchmarks/cluster_bench.py [--nodes 2] [--executors 2]
        [--concurrency 256] [--rates 1000,5000] [--seconds 60] [--spike 50000]

Starts etcd and Postgres (fsync on), `wheel scheduler` nodes and `wheel
executor`s running a no-op task, then for each scenario registers one-off
jobs up front and waits until every occurrence is final:

- steady: `rate` occurrences a second, evenly spaced, for `seconds`;
- spike: `spike` occurrences due at the same instant.

Lateness is the executor's handler start minus the scheduled instant, read
back from Postgres; lost = occurrences not succeeded once nothing has moved
for a minute; duplicates = handler runs beyond the first of an occurrence
(a lease that expired while its executor was still running it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from benchmarks.cpu_accounting import seconds_by_role
from tests.e2e.cluster import Cluster

from wheel import eventloop
from wheel.local import LocalServices
from wheel.model.jobs import JobSpec, Schedule, ScheduleKind
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.registration import register_jobs
from wheel.store import Store, migrate

PARTITIONS = 64
CHUNK = 5000
NODE_OPTIONS = {
    "partitions": PARTITIONS,
    "lease_s": 30,
    "heartbeat_interval_s": 10,
    "session_ttl_s": 10,
    "window_s": 300,
    "horizon_s": 3600,
    "catch_up_interval_s": 5,
    "materialise_interval_s": 5,
    "reap_interval_s": 1,
    "load_interval_s": 1,
    "pool_size": 8,
    "tenant_in_flight_cap": 100_000,
    "catch_up_rate_per_s": 100_000,
    # The product's defaults where the test cluster's FAST settings differ.
    "prefetch_ms": SchedulerConfig.__dataclass_fields__["prefetch_ms"].default,
}


async def register(store: Store, instants: list[datetime], task: str) -> float:
    """Register one-off no-op jobs at these instants; returns the seconds it took."""
    name = f"bench-{uuid.uuid4().hex[:8]}"
    tenant = (await store.tenants.create(name, max_in_flight=1_000_000)).id
    began = time.perf_counter()
    for first in range(0, len(instants), CHUNK):
        specs = [
            JobSpec("bench", task, Schedule(ScheduleKind.AT, at=instant))
            for instant in instants[first : first + CHUNK]
        ]
        await register_jobs(store, tenant, specs, partitions=PARTITIONS)
    return time.perf_counter() - began


def results(dsn: str, since: datetime) -> dict[str, float]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            """
            SELECT count(*) FILTER (WHERE e.status = 'succeeded'),
                   count(*) FILTER (WHERE e.status <> 'succeeded'),
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM e.started_at - e.scheduled_for)),
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM e.started_at - e.scheduled_for)),
                   max(extract(epoch FROM e.started_at - e.scheduled_for)),
                   extract(epoch FROM max(e.started_at) - min(e.scheduled_for)),
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM e.scheduled_for - e.dispatched_at)),
                   min(extract(epoch FROM e.scheduled_for - e.dispatched_at))
            FROM executions e WHERE e.scheduled_for >= %s
            """,  # noqa: E501
            (since,),
        ).fetchone()
        runs = conn.execute(
            "SELECT count(*) - count(DISTINCT (job_id, scheduled_for)) FROM attempts"
            " WHERE scheduled_for >= %s AND outcome <> 'not_started'",
            (since,),
        ).fetchone()
    assert row is not None
    assert runs is not None
    succeeded, other, p50, p99, worst, span, ahead_p50, ahead_min = row
    return {
        "succeeded": succeeded, "lost": other, "duplicates": runs[0],
        "p50_ms": (p50 or 0) * 1000, "p99_ms": (p99 or 0) * 1000, "max_ms": (worst or 0) * 1000,
        "span_s": span or 0.0,
        "claimed_ahead_p50_ms": float(ahead_p50 or 0) * 1000,
        "claimed_ahead_min_ms": float(ahead_min or 0) * 1000,
    }  # fmt: skip


def timeline(dsn: str, since: datetime, bucket_ms: int = 250) -> str:
    """Runs claimed, started and finished per bucket around the first instant: where a
    pipeline stalls (claims waiting for credit, starts waiting for claims)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            """
            WITH t AS (SELECT min(scheduled_for) AS t0 FROM executions WHERE scheduled_for >= %(since)s)
            SELECT b, sum(claimed)::int, sum(started)::int, sum(finished)::int FROM (
                SELECT floor(extract(epoch FROM e.dispatched_at - t.t0) * 1000 / %(ms)s) AS b,
                       1 AS claimed, 0 AS started, 0 AS finished
                FROM executions e, t WHERE e.scheduled_for >= %(since)s
                UNION ALL
                SELECT floor(extract(epoch FROM e.started_at - t.t0) * 1000 / %(ms)s), 0, 1, 0
                FROM executions e, t WHERE e.scheduled_for >= %(since)s
                UNION ALL
                SELECT floor(extract(epoch FROM e.finished_at - t.t0) * 1000 / %(ms)s), 0, 0, 1
                FROM executions e, t WHERE e.scheduled_for >= %(since)s
            ) x WHERE b IS NOT NULL GROUP BY b ORDER BY b
            """,  # noqa: E501
            {"since": since, "ms": bucket_ms},
        ).fetchall()
    lines = ["| from T (ms) | claimed | started | finished |", "|---:|---:|---:|---:|"]
    lines += [f"| {int(b) * bucket_ms:+} | {c} | {s} | {f} |" for b, c, s, f in rows]
    return "\n".join(lines)


def pending(dsn: str, since: datetime) -> int:
    """Occurrences not final yet; -1 while Postgres cannot be reached (it may be recovering)."""
    try:
        conn = psycopg.connect(dsn, autocommit=True)
    except psycopg.OperationalError:
        return -1
    with conn:
        row = conn.execute(
            "SELECT count(*) FROM executions WHERE scheduled_for >= %s"
            " AND status NOT IN ('succeeded', 'dead', 'skipped', 'needs_review', 'cancelled')",
            (since,),
        ).fetchone()
    assert row is not None
    return int(row[0])


async def scenario(
    store: Store,
    dsn: str,
    name: str,
    offsets_s: list[float],
    margin_s: float,
    task: str,
    *,
    roles: Mapping[str, list[int]],
    show_timeline: bool = False,
) -> dict[str, float | str]:
    start = datetime.now(UTC) + timedelta(seconds=margin_s)
    instants = [start + timedelta(seconds=o) for o in offsets_s]
    took = await register(store, instants, task)
    if datetime.now(UTC) > start:
        raise SystemExit(f"{name}: registering took {took:.1f} s, past the start; raise the margin")
    cpu_before = seconds_by_role(roles)
    # Wait until every occurrence is final, or nothing has moved for a minute (then
    # what is left is lost); a backlog past capacity drains after the last instant.
    last_change, left = datetime.now(UTC), -1
    while datetime.now(UTC) < instants[-1] or datetime.now(UTC) - last_change < timedelta(
        seconds=60
    ):
        now_left = pending(dsn, start)
        if now_left == 0:
            break
        if now_left < 0:
            print("Postgres unreachable; waiting", flush=True)
        if now_left != left:
            left, last_change = now_left, datetime.now(UTC)
        await asyncio.sleep(1)  # other processes' progress: read back from Postgres
    cpu = seconds_by_role(roles)
    figures = results(dsn, start)
    for role, seconds in cpu.items():
        figures[f"{role}_us_per_run"] = (seconds - cpu_before[role]) / len(offsets_s) * 1e6
    if show_timeline:
        print(f"{name}:\n{timeline(dsn, start)}", flush=True)
    rate = figures["succeeded"] / figures["span_s"] if figures["span_s"] else 0.0
    return {"scenario": name, "rate_per_s": rate, **figures}


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="wheel-cluster-bench-"))
    os.chmod(root, 0o755)  # Postgres's user must reach its data dir
    services = LocalServices.start(root, durable=True)
    cluster: Cluster | None = None
    try:
        dsn = services.postgres.dsn()
        await migrate(dsn)
        cluster = Cluster(dsn, services.etcd.port, "bench", logs=root / "logs")
        (root / "logs").mkdir()
        for n in range(args.nodes):
            cluster.start_node(f"node-{n}", **NODE_OPTIONS)
        for n in range(args.executors):
            cluster.start_executor(f"executor-{n}", concurrency=args.concurrency)
        await cluster.ready(within=120, partitions=PARTITIONS)
        store = await Store.open(dsn, max_size=4)
        roles = {
            "node": [p.pid for p in cluster.nodes.values()],
            "executor": [p.pid for p in cluster.executors.values()],
            "postgres": [services.postgres.process.pid],
        }
        rows: list[dict[str, float | str]] = []
        for rate in args.rates:
            count = rate * args.seconds
            offsets = [n / rate for n in range(count)]
            margin = 20 + count / 1200  # registering runs at ~1,500 jobs/s here
            name = f"steady {rate}/s x {args.seconds}s"
            rows.append(await scenario(store, dsn, name, offsets, margin, args.task, roles=roles))
            print(rows[-1], flush=True)
        if args.spike:
            margin = 20 + args.spike / 1200
            name = f"spike {args.spike}"
            rows.append(await scenario(store, dsn, name, [0.0] * args.spike, margin, args.task,
                                       roles=roles, show_timeline=args.timeline))  # fmt: skip
            print(rows[-1], flush=True)
        await store.close()
        print()
        print(
            "| scenario | executions/s | p50 ms | p99 ms | max ms | succeeded | lost | duplicates "
            "| CPU µs/run: node | executor | postgres |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(
                f"| {r['scenario']} | {float(r['rate_per_s']):,.0f} | {float(r['p50_ms']):.1f} "
                f"| {float(r['p99_ms']):.1f} | {float(r['max_ms']):.1f} | {int(r['succeeded']):,} "
                f"| {int(r['lost'])} | {int(r['duplicates'])} | {float(r['node_us_per_run']):.0f} "
                f"| {float(r['executor_us_per_run']):.0f} | {float(r['postgres_us_per_run']):.0f} |"
            )
    finally:
        if cluster is not None:
            cluster.stop()
        services.stop()
        if args.keep:
            print(f"kept {root} (logs in {root / 'logs'})")
        else:
            shutil.rmtree(root, ignore_errors=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--executors", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--rates", type=lambda s: [int(x) for x in s.split(",") if x],
                        default=[1000, 5000])  # fmt: skip
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--spike", type=int, default=50_000)
    parser.add_argument("--keep", action="store_true", help="keep the data and logs directory")
    parser.add_argument("--timeline", action="store_true",
                        help="print the spike's claims, starts, finishes per 250 ms")  # fmt: skip
    parser.add_argument(
        "--task",
        choices=["noop_async", "noop"],
        default="noop_async",
        help="noop_async runs on the event loop; noop (sync) on a worker thread",
    )
    return parser.parse_args()


if __name__ == "__main__":
    eventloop.run(main(parse()))
