"""End to end on one machine: wheel clusters and pgqueuer on one durable Postgres.

    PYTHONPATH=. .venv/bin/python benchmarks/cluster_bench.py
        [--topologies 1x1,2x2] [--workloads spike:20000,steady:1000,register:20000,...]
        [--concurrency 512] [--seconds 20] [--no-pgqueuer] [--timeline]

Starts etcd and Postgres (fsync on). For each topology (nodes x executors) it
starts `wheel scheduler` nodes and `wheel executor`s running a no-op task and
runs every workload, registering one-off jobs through the public SDK
(`create_jobs`) before their instant, then waits until every occurrence is
final; then pgqueuer (benchmarks/pgqueuer_bench.py, 2 worker processes) runs
the same workloads on the same Postgres. Workloads:

- `spike:N`: N occurrences due at the same instant (figure: last start after T);
- `steady:R` or `steady:RxS`: R occurrences a second, evenly spaced, for S
  seconds (`--seconds` when not given);
- `register:N`: N jobs registered through the SDK, one client (jobs/s, and CPU
  per job of the node, Postgres and the client);
- `pickup:R` or `pickup:RxS`: run-now jobs, R a second, created in one
  `create_jobs` call every 25 ms while the node runs them, as a queue's producer
  would: pickup = handler start - the start of the call that created the job
  (wheel only).

Lateness is the handler's start minus the scheduled instant (wheel's read
back from Postgres); lost = occurrences not succeeded once nothing has moved
for a minute; duplicates = handler runs beyond the first of an occurrence.
The last tables put wheel and pgqueuer side by side with wheel ÷ pgqueuer:
the headline figures, then CPU per run of the whole stack (wheel: nodes,
executors, Postgres; pgqueuer: its worker processes and Postgres), counted from
/proc over process trees from the end of registration to the last start.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from benchmarks import pgqueuer_bench
from benchmarks.cpu_accounting import peak_rss_mib, seconds_by_role
from tests.e2e.cluster import Cluster

from wheel import eventloop
from wheel.client import AsyncClient, NewJob, at, now
from wheel.local import LocalServices
from wheel.scheduler.config import SchedulerConfig
from wheel.store import Store, migrate

PARTITIONS = 64
MARGIN_JOBS_PER_S = 1000
"""A scenario starts once its jobs are registered at this rate (the SDK's, with margin)."""
Workload = tuple[str, int, int]
"""kind, count (or rate a second), seconds (steady only)."""
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


async def register(client: AsyncClient, instants: list[datetime], task: str) -> float:
    """Register one-off no-op jobs at these instants through the SDK; the seconds it took."""
    batch = time.monotonic_ns()  # names are unique per tenant: one a job, every call its own
    jobs = [NewJob(f"bench-{batch}-{n}", task, at(instant)) for n, instant in enumerate(instants)]
    began = time.perf_counter()
    await client.create_jobs(jobs)
    return time.perf_counter() - began


PICKUP_CALL_S = 0.025
"""A pickup workload creates run-now jobs in one create_jobs call every this long."""


async def pickup(
    client: AsyncClient, dsn: str, rate: int, seconds: int, task: str,
    roles: Mapping[str, list[int]],
) -> dict[str, float | str]:  # fmt: skip
    """Run-now jobs, `rate` a second for `seconds`, created in a call every PICKUP_CALL_S
    (as a queue's producer would) while the node runs them: pickup is the handler's
    start minus the start of the call that created the job."""
    per_call = max(1, round(rate * PICKUP_CALL_S))
    calls = max(1, round(rate * seconds / per_call))
    sent: dict[str, float] = {}  # job id -> epoch seconds its create call began
    call_s: list[float] = []
    tag = time.monotonic_ns()
    cpu_before = seconds_by_role(roles)
    began = time.monotonic()

    async def create(n: int) -> None:
        jobs = [NewJob(f"pickup-{tag}-{n}-{i}", task, now()) for i in range(per_call)]
        at_s, t0 = time.time(), time.perf_counter()
        created = await client.create_jobs(jobs)
        call_s.append(time.perf_counter() - t0)
        for job in created:
            sent[str(job.id)] = at_s

    pending: set[asyncio.Task[None]] = set()
    for n in range(calls):
        await asyncio.sleep(max(0.0, began + n * PICKUP_CALL_S - time.monotonic()))
        task_ = asyncio.create_task(create(n))
        pending.add(task_)
        task_.add_done_callback(pending.discard)
    await asyncio.gather(*pending)
    offered_s = time.monotonic() - began
    ids = list(sent)
    deadline = time.monotonic() + 120
    while True:
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT job_id::text, extract(epoch FROM started_at) FROM executions"
                " WHERE job_id = ANY(%s::uuid[]) AND status = 'succeeded'", (ids,)
            ).fetchall()  # fmt: skip
        if len(rows) == len(ids) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    cpu = seconds_by_role(roles)
    waits = sorted(float(started) - sent[job_id] for job_id, started in rows)
    call_s.sort()

    def pct(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else 0.0

    figures: dict[str, float | str] = {
        "accepted_per_s": len(ids) / offered_s, "started": len(rows), "lost": len(ids) - len(rows),
        "pickup_p50_ms": pct(waits, 0.5), "pickup_p99_ms": pct(waits, 0.99),
        "pickup_max_ms": pct(waits, 1.0), "call_p50_ms": pct(call_s, 0.5),
        "call_p99_ms": pct(call_s, 0.99),
    }  # fmt: skip
    for role in roles:
        figures[f"{role}_us_per_run"] = (cpu[role] - cpu_before[role]) / max(1, len(ids)) * 1e6
    return figures


def results(dsn: str, since: datetime, until: datetime) -> dict[str, float]:
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
            FROM executions e WHERE e.scheduled_for BETWEEN %s AND %s
            """,  # noqa: E501
            (since, until),
        ).fetchone()
        runs = conn.execute(
            "SELECT count(*) - count(DISTINCT (job_id, scheduled_for)) FROM attempts"
            " WHERE scheduled_for BETWEEN %s AND %s AND outcome <> 'not_started'",
            (since, until),
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


def timeline(dsn: str, since: datetime, until: datetime, bucket_ms: int = 250) -> str:
    """Runs claimed, started and finished per bucket around the first instant: where a
    pipeline stalls (claims waiting for credit, starts waiting for claims)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            """
            WITH t AS (SELECT min(scheduled_for) AS t0 FROM executions WHERE scheduled_for BETWEEN %(since)s AND %(until)s)
            SELECT b, sum(claimed)::int, sum(started)::int, sum(finished)::int FROM (
                SELECT floor(extract(epoch FROM e.dispatched_at - t.t0) * 1000 / %(ms)s) AS b,
                       1 AS claimed, 0 AS started, 0 AS finished
                FROM executions e, t WHERE e.scheduled_for BETWEEN %(since)s AND %(until)s
                UNION ALL
                SELECT floor(extract(epoch FROM e.started_at - t.t0) * 1000 / %(ms)s), 0, 1, 0
                FROM executions e, t WHERE e.scheduled_for BETWEEN %(since)s AND %(until)s
                UNION ALL
                SELECT floor(extract(epoch FROM e.finished_at - t.t0) * 1000 / %(ms)s), 0, 0, 1
                FROM executions e, t WHERE e.scheduled_for BETWEEN %(since)s AND %(until)s
            ) x WHERE b IS NOT NULL GROUP BY b ORDER BY b
            """,  # noqa: E501
            {"since": since, "until": until, "ms": bucket_ms},
        ).fetchall()
    lines = ["| from T (ms) | claimed | started | finished |", "|---:|---:|---:|---:|"]
    lines += [f"| {int(b) * bucket_ms:+} | {c} | {s} | {f} |" for b, c, s, f in rows]
    return "\n".join(lines)


def pending(dsn: str, since: datetime, until: datetime) -> int:
    """Occurrences not final yet; -1 while Postgres cannot be reached (it may be recovering)."""
    try:
        conn = psycopg.connect(dsn, autocommit=True)
    except psycopg.OperationalError:
        return -1
    with conn:
        row = conn.execute(
            "SELECT count(*) FROM executions WHERE scheduled_for BETWEEN %s AND %s"
            " AND status NOT IN ('succeeded', 'dead', 'skipped', 'needs_review', 'cancelled')",
            (since, until),
        ).fetchone()
    assert row is not None
    return int(row[0])


async def scenario(
    client: AsyncClient,
    dsn: str,
    name: str,
    offsets_s: list[float],
    task: str,
    *,
    roles: Mapping[str, list[int]],
    show_timeline: bool = False,
) -> dict[str, float | str]:
    margin_s = 15 + len(offsets_s) / MARGIN_JOBS_PER_S
    start = datetime.now(UTC) + timedelta(seconds=margin_s)
    instants = [start + timedelta(seconds=o) for o in offsets_s]
    took = await register(client, instants, task)
    if datetime.now(UTC) > start:
        raise SystemExit(f"{name}: registering took {took:.1f} s, past the start; raise the margin")
    cpu_before = seconds_by_role(roles)
    # Wait until every occurrence is final, or nothing has moved for a minute since the
    # last instant (then what is left is lost); a backlog past capacity drains after it.
    # Before the last instant nothing need move: the minute counts from then at the least.
    last_change, left = datetime.now(UTC), -1
    while datetime.now(UTC) - max(last_change, instants[-1]) < timedelta(seconds=60):
        now_left = pending(dsn, start, instants[-1])
        if now_left == 0:
            break
        if now_left < 0:
            print("Postgres unreachable; waiting", flush=True)
        if now_left != left:
            left, last_change = now_left, datetime.now(UTC)
        await asyncio.sleep(1)  # other processes' progress: read back from Postgres
    cpu = seconds_by_role(roles)
    figures = results(dsn, start, instants[-1])
    for role, seconds in cpu.items():
        figures[f"{role}_us_per_run"] = (seconds - cpu_before[role]) / len(offsets_s) * 1e6
    if show_timeline:
        print(f"{name}:\n{timeline(dsn, start, instants[-1])}", flush=True)
    rate = figures["succeeded"] / figures["span_s"] if figures["span_s"] else 0.0
    last = (instants[-1] - start).total_seconds()
    figures["last_start_s"] = float(figures["span_s"]) - last
    figures["executor_peak_rss_mib"] = peak_rss_mib(list(roles["executor"]))
    return {"scenario": name, "rate_per_s": rate, **figures}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def run_wheel(
    services: LocalServices, root: Path, topology: str, workloads: list[Workload],
    args: argparse.Namespace,
) -> dict[str, dict[str, float | str]]:  # fmt: skip
    """Every workload on a wheel cluster of `topology` ("NxM": nodes x executors)."""
    nodes, executors = (int(n) for n in topology.split("x"))
    dsn = services.postgres.dsn()
    logs = root / f"logs-{topology}"
    logs.mkdir()
    cluster = Cluster(dsn, services.etcd.port, f"bench-{topology}", logs=logs)
    store = await Store.open(dsn, max_size=4)
    try:
        addresses = [f"127.0.0.1:{free_port()}" for _ in range(nodes)]
        for n, address in enumerate(addresses):
            cluster.start_node(f"node-{n}", listen=address, **NODE_OPTIONS)
        for n in range(executors):
            cluster.start_executor(f"executor-{n}", concurrency=args.concurrency)
        await cluster.ready(within=120, partitions=PARTITIONS)
        tenant = await store.tenants.create(f"bench-{uuid.uuid4().hex[:8]}",
                                            max_in_flight=1_000_000)  # fmt: skip
        _, token = await store.tenants.create_token(tenant.id, "bench")
        roles = {
            "node": [p.pid for p in cluster.nodes.values()],
            "executor": [p.pid for p in cluster.executors.values()],
            "postgres": [services.postgres.process.pid],
        }
        rows: dict[str, dict[str, float | str]] = {}
        async with AsyncClient(addresses, token=token, timeout_s=60) as client:
            for kind, n, seconds in workloads:
                label = workload_label(kind, n, seconds)
                if kind == "register":
                    instants = [datetime.now(UTC) + timedelta(days=2)] * n
                    cpu_before, client_before = seconds_by_role(roles), time.process_time()
                    took = await register(client, instants, args.task)
                    cpu, client_s = seconds_by_role(roles), time.process_time() - client_before
                    rows[label] = {
                        "scenario": label, "jobs_per_s": n / took,
                        "client_us_per_job": client_s / n * 1e6,
                        **{f"{role}_us_per_job": (cpu[role] - cpu_before[role]) / n * 1e6
                           for role in ("node", "postgres")},
                    }  # fmt: skip
                elif kind == "pickup":
                    rows[label] = {"scenario": label, **await pickup(
                        client, dsn, n, seconds, args.task, roles)}  # fmt: skip
                elif kind == "spike":
                    rows[label] = await scenario(
                        client, dsn, label, [0.0] * n, args.task, roles=roles,
                        show_timeline=args.timeline,
                    )  # fmt: skip
                else:
                    offsets = [i / n for i in range(n * seconds)]
                    rows[label] = await scenario(client, dsn, label, offsets, args.task,
                                                 roles=roles)  # fmt: skip
                print(topology, rows[label], flush=True)
        return rows
    finally:
        await store.close()
        cluster.stop()


async def run_pgqueuer(
    dsn: str, postgres_pid: int, workloads: list[Workload]
) -> dict[str, dict[str, float | str]]:
    """The same workloads on pgqueuer, 2 worker processes, on the same Postgres."""
    await pgqueuer_bench.install(dsn)
    rows: dict[str, dict[str, float | str]] = {}
    for kind, n, seconds in workloads:
        label = workload_label(kind, n, seconds)
        if kind == "pickup":
            continue  # not implemented for pgqueuer
        if kind == "register":
            rows[label] = {
                "scenario": label,
                **await pgqueuer_bench.registration(dsn, n, postgres_pid),
            }
        elif kind == "spike":
            rows[label] = {
                "scenario": label,
                **await pgqueuer_bench.spike(
                    dsn, n, margin_s=15 + n / 20000, postgres_pid=postgres_pid
                ),
            }
        else:
            rows[label] = {
                "scenario": label,
                **await pgqueuer_bench.steady(
                    dsn, n, seconds, margin_s=15 + n * seconds / 20000, postgres_pid=postgres_pid
                ),
            }
        print("pgqueuer", rows[label], flush=True)
    return rows


def workload_label(kind: str, n: int, seconds: int) -> str:
    if kind == "spike":
        return f"spike {n:,} due at T"
    if kind == "steady":
        return f"steady {n:,}/s x {seconds} s"
    if kind == "pickup":
        return f"run-now {n:,}/s x {seconds} s (pickup)"
    return f"register {n:,} jobs (SDK)"


def headline(row: dict[str, float | str] | None) -> tuple[str, float | None, bool]:
    """A row's figure as text, its value, and whether lower is better."""
    if row is None:
        return "—", None, True
    if "jobs_per_s" in row:
        value = float(row["jobs_per_s"])
        return f"{value:,.0f} jobs/s", value, False
    lost = int(float(row["lost"]))
    lost_note = f", {lost:,} not run" if lost else ""
    if "pickup_p99_ms" in row:
        value = float(row["pickup_p99_ms"])
        return (f"{float(row['accepted_per_s']):,.0f}/s accepted, pickup p50 "
                f"{float(row['pickup_p50_ms']):,.1f} ms, p99 {value:,.1f} ms{lost_note}",
                value, True)  # fmt: skip
    if str(row["scenario"]).startswith("spike"):
        value = float(row["last_start_s"])
        return f"last start {value:.2f} s{lost_note}", value, True
    value = float(row["p99_ms"])
    return f"{float(row['rate_per_s']):,.0f}/s, p99 {value:,.1f} ms{lost_note}", value, True


def ratio(wheel: float | None, other: float | None, lower_is_better: bool) -> str:
    if wheel is None or other is None or wheel <= 0 or other <= 0:
        return "—"
    better = other / wheel if lower_is_better else wheel / other
    return f"{better:.1f}x better" if better >= 1 else f"{1 / better:.1f}x worse"


def report(
    wheel: dict[str, dict[str, dict[str, float | str]]],
    pgq: dict[str, dict[str, float | str]],
    labels: list[str],
) -> None:
    topologies = list(wheel)
    print()
    print("| workload | " + " | ".join(f"wheel {t}" for t in topologies)
          + " | pgqueuer | wheel ÷ pgqueuer (" + topologies[0] + ") |")  # fmt: skip
    print("|---|" + "---:|" * (len(topologies) + 2))
    for label in labels:
        cells = [headline(wheel[t].get(label)) for t in topologies]
        theirs = headline(pgq.get(label)) if pgq else ("—", None, True)
        print(f"| {label} | " + " | ".join(c[0] for c in cells) + f" | {theirs[0]} | "
              + ratio(cells[0][1], theirs[1], cells[0][2]) + " |")  # fmt: skip
    print()
    print(
        "| wheel | workload | executions/s | p50 ms | p99 ms | max ms | succeeded | lost "
        "| duplicates | CPU µs/run: node | executor | postgres |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in topologies:
        for label in labels:
            r = wheel[t].get(label)
            if r is None or "jobs_per_s" in r or "pickup_p99_ms" in r:
                continue
            print(
                f"| {t} | {label} | {float(r['rate_per_s']):,.0f} | {float(r['p50_ms']):.1f} "
                f"| {float(r['p99_ms']):.1f} | {float(r['max_ms']):.1f} "
                f"| {int(float(r['succeeded'])):,} | {int(float(r['lost']))} "
                f"| {int(float(r['duplicates']))} | {float(r['node_us_per_run']):.0f} "
                f"| {float(r['executor_us_per_run']):.0f} | {float(r['postgres_us_per_run']):.0f} |"
            )
    cpu_report(wheel[topologies[0]], pgq, labels, topologies[0])


def _us(row: dict[str, float | str] | None, key: str) -> float | None:
    return float(row[key]) if row is not None and key in row else None


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def cpu_report(
    wheel: dict[str, dict[str, float | str]], pgq: dict[str, dict[str, float | str]],
    labels: list[str], topology: str,
) -> None:  # fmt: skip
    """CPU µs per run (per job registered) of each part of each stack, and the totals'
    ratio: what a run costs whole, beside the alternative on the same machine and Postgres."""
    print()
    print(f"CPU µs per run (register: per job), wheel {topology} beside pgqueuer (2 workers):")
    print("| workload | wheel node | executor / client | postgres | wheel total | pgqueuer "
          "workers / client | postgres | pgqueuer total | wheel ÷ pgqueuer |")  # fmt: skip
    print("|---|" + "---:|" * 8)
    for label in labels:
        ours, theirs = wheel.get(label), pgq.get(label)
        unit = "job" if ours is not None and "jobs_per_s" in ours else "run"
        mine = [_us(ours, f"node_us_per_{unit}"),
                _us(ours, "executor_us_per_run" if unit == "run" else "client_us_per_job"),
                _us(ours, f"postgres_us_per_{unit}")]  # fmt: skip
        other = [_us(theirs, "workers_us_per_run" if unit == "run" else "client_us_per_job"),
                 _us(theirs, f"postgres_us_per_{unit}")]  # fmt: skip
        total = None if None in mine else sum(v for v in mine if v is not None)
        other_total = None if None in other else sum(v for v in other if v is not None)
        print(f"| {label} | " + " | ".join(_cell(v) for v in mine) + f" | {_cell(total)} | "
              + " | ".join(_cell(v) for v in other) + f" | {_cell(other_total)} | "
              + ratio(total, other_total, True) + " |")  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="wheel-cluster-bench-"))
    os.chmod(root, 0o755)  # Postgres's user must reach its data dir
    services = LocalServices.start(root, durable=True)
    try:
        dsn = services.postgres.dsn()
        await migrate(dsn)
        wheel: dict[str, dict[str, dict[str, float | str]]] = {}
        for topology in args.topologies:
            wheel[topology] = await run_wheel(services, root, topology, args.workloads, args)
        pgq = (await run_pgqueuer(dsn, services.postgres.process.pid, args.workloads)
               if args.pgqueuer else {})  # fmt: skip
        report(wheel, pgq, [workload_label(k, n, s) for k, n, s in args.workloads])
    finally:
        services.stop()
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _workloads(text: str) -> list[tuple[str, int, int | None]]:
    """`kind:N` items; a steady rate may name its seconds (`steady:10000x60`)."""
    workloads: list[tuple[str, int, int | None]] = []
    for item in text.split(","):
        kind, _, count = item.partition(":")
        rate, _, seconds = count.partition("x")
        timed = kind in ("steady", "pickup")
        known = kind in ("spike", "register") or timed
        if not known or not rate.isdigit() or (seconds and not (timed and seconds.isdigit())):
            raise argparse.ArgumentTypeError(
                f"{item!r}: spike:N, steady:RATE[xSECONDS], pickup:RATE[xSECONDS] or register:N"
            )
        workloads.append((kind, int(rate), int(seconds) if seconds else None))
    return workloads


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topologies", type=lambda s: s.split(","), default=["1x1", "2x2"])
    parser.add_argument(
        "--workloads",
        type=_workloads,
        default=_workloads(
            "spike:20000,spike:100000,steady:1000,steady:5000,steady:10000,register:20000"
        ),
    )
    parser.add_argument(
        "--concurrency", type=int, default=512, help="each executor's pool of concurrent runs"
    )
    parser.add_argument("--seconds", type=int, default=20, help="how long a steady rate lasts")
    parser.add_argument("--pgqueuer", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--keep", action="store_true", help="keep the data and logs directory")
    parser.add_argument("--timeline", action="store_true",
                        help="print the spike's claims, starts, finishes per 250 ms")  # fmt: skip
    parser.add_argument(
        "--task",
        choices=["noop_async", "noop"],
        default="noop_async",
        help="noop_async runs on the event loop; noop (sync) on a worker thread",
    )
    args = parser.parse_args()
    args.workloads = [(kind, n, seconds or args.seconds) for kind, n, seconds in args.workloads]
    return args


if __name__ == "__main__":
    eventloop.run(main(parse()))
