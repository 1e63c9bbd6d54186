"""The same scenarios as cluster_bench.py, run on pgqueuer (PyPI `pgqueuer` >=1.6,<2).

    .venv/bin/pip install "pgqueuer[psycopg]>=1.6,<2"
    PYTHONPATH=. .venv/bin/python -m benchmarks.pgqueuer_bench demo

`install`, `spike`, `steady` and `registration` take the DSN of a running Postgres, so the
cluster benchmark can call them on its own server in the same run. Every job is a
pgqueuer job with `execute_after` = its scheduled instant minus the moment it is enqueued
(pgqueuer adds that delay to the server's NOW()), and a payload carrying a run tag, its
index and the instant as an epoch float. The handler is an async no-op that notes
time.time() as it starts. `workers` separate processes (`python -m benchmarks.pgqueuer_bench
worker`), each a `PgQueuer` over one autocommit psycopg `AsyncConnection` (`PsycopgDriver`),
are started and answering pgqueuer's LISTEN health probe before the jobs are enqueued. They
keep the (scheduled, started) pairs in memory and write them to a file when sent SIGTERM;
progress reaches the parent as counts on their stdout, so measuring adds no database load.

Lateness = handler start - scheduled instant; lost = jobs never started once every job has
started or nothing moved for 60 s; duplicates = handler starts beyond one per job.
pgqueuer's tables are truncated before and after each scenario.

pgqueuer settings (`PgQueuer.run` and the entrypoint), chosen for a fast no-op workload:

- batch_size=200 (default 10): rows one dequeue statement claims, and with it the size at
  which completions are flushed (the status-log buffer's max_size is batch_size); larger
  batches mean fewer round trips per job through a worker's single connection;
- max_concurrent_tasks=None and entrypoint concurrency_limit=0 (the defaults): no per-worker
  or per-entrypoint cap, so the dequeue query has no budget CTEs and nothing waits for
  capacity; a no-op task ends as soon as it starts;
- dequeue_timeout=1 s (default 30 s): the longest a worker sleeps when it knows of no due
  or deferred job. pgqueuer already shortens the wait to the next deferred job's
  execute_after (but never below its fixed 0.1 s poll floor, `min_dequeue_poll_interval`,
  left as shipped) and wakes on its insert trigger's NOTIFY;
- heartbeat_timeout=30 s and log_aggregation_interval=30 s (the defaults): a no-op job never
  lives long enough to beat, and the log-to-statistics fold is part of the real cost;
- durability: pgqueuer's default `durable` (all tables LOGGED), like wheel's tables.

Expect pauses of up to a second. `PsycopgDriver` waits for NOTIFYs through
`AsyncConnection.notifies(timeout=1.0)`, and that call holds the connection's lock while it
waits. The worker's dequeue and other queries go through the same connection, so they queue
behind it until a notification arrives or the second runs out. A spike's first batch starts
about 0.2 s after T, then the next batches start about 1 s later.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import psycopg
from benchmarks.cpu_accounting import seconds_by_role
from pgqueuer import PgQueuer, PsycopgDriver, Queries
from pgqueuer.errors import FailingListenerError
from pgqueuer.models import Job, QueueEntrypoint
from psycopg.rows import TupleRow

from wheel import eventloop
from wheel.local import LocalServices

ENTRYPOINT = "bench_noop"
CHUNK = 5000  # jobs per enqueue call
BATCH_SIZE = 200
DEQUEUE_TIMEOUT = timedelta(seconds=1)
STALL_S = 60.0  # no handler start for this long after the last instant: the rest are lost
READY_TIMEOUT_S = 60.0
REPORT_INTERVAL_S = 0.25  # how often a worker prints its count of handler starts
REPO = Path(__file__).resolve().parents[1]


async def _connect(dsn: str) -> psycopg.AsyncConnection[TupleRow]:
    return await psycopg.AsyncConnection.connect(dsn, autocommit=True)


async def install(dsn: str) -> None:
    """Install pgqueuer's schema, or bring an existing install up to date (idempotent)."""
    async with await _connect(dsn) as conn:
        queries = Queries(PsycopgDriver(conn))
        if await queries.schema_is_installed():
            await queries.upgrade()
        else:
            await queries.install()


async def _reset(dsn: str) -> None:
    """Empty pgqueuer's queue, log and statistics tables."""
    async with await _connect(dsn) as conn:
        queries = Queries(PsycopgDriver(conn))
        await queries.clear_queue()
        await queries.clear_queue_log()
        await queries.clear_statistics_log()


async def _enqueue(queries: Queries, tag: str, instants: list[float]) -> None:
    """Enqueue one job per instant, CHUNK per call, each due at its instant."""
    for first in range(0, len(instants), CHUNK):
        chunk = instants[first : first + CHUNK]
        now = time.time()
        await queries.enqueue(
            [ENTRYPOINT] * len(chunk),
            [f"{tag} {first + n} {at!r}".encode() for n, at in enumerate(chunk)],
            [0] * len(chunk),
            [timedelta(seconds=max(at - now, 0.0)) for at in chunk],
        )


# Worker processes.


def _write_starts(path: Path, starts: list[tuple[bytes | None, float]]) -> None:
    lines = [f"{(payload or b'').decode()} {started!r}\n" for payload, started in starts]
    path.write_text("".join(lines))


async def _report(starts: list[tuple[bytes | None, float]], stop: asyncio.Event) -> None:
    reported = 0
    while not stop.is_set():
        if len(starts) != reported:
            reported = len(starts)
            print(f"started {reported}", flush=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), REPORT_INTERVAL_S)


async def _worker(dsn: str, out: Path, batch_size: int, dequeue_timeout: timedelta) -> None:
    """Run one pgqueuer worker until SIGTERM, then write its handler starts to `out`."""
    starts: list[tuple[bytes | None, float]] = []
    async with await _connect(dsn) as conn:
        pgq = PgQueuer.from_psycopg_connection(conn)

        @pgq.entrypoint(ENTRYPOINT)
        async def noop(job: Job) -> None:
            started = time.time()
            starts.append((job.payload, started))

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, pgq.shutdown.set)
        running = asyncio.create_task(
            pgq.run(dequeue_timeout=dequeue_timeout, batch_size=batch_size)
        )
        # Ready once pgqueuer's own LISTEN round trip answers: its dequeue loop is running.
        while True:
            try:
                await pgq.qm.listener_healthy(timeout=timedelta(seconds=1))
                break
            except FailingListenerError:
                if running.done():
                    break
        if not running.done():
            print("ready", flush=True)
        reporter = asyncio.create_task(_report(starts, pgq.shutdown))
        try:
            await running
        finally:
            await reporter
    _write_starts(out, starts)


@dataclass
class _Worker:
    process: asyncio.subprocess.Process
    out: Path
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    started: int = 0
    reader: asyncio.Task[None] | None = None


async def _follow(worker: _Worker) -> None:
    assert worker.process.stdout is not None
    async for raw in worker.process.stdout:
        line = raw.decode().strip()
        if line == "ready":
            worker.ready.set()
        elif line.startswith("started "):
            worker.started = int(line.split()[1])


async def _start_workers(dsn: str, count: int, directory: Path) -> list[_Worker]:
    path = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    workers: list[_Worker] = []
    for n in range(count):
        out = directory / f"worker-{n}.txt"
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchmarks.pgqueuer_bench", "worker",
            "--dsn", dsn, "--out", str(out),
            env=env, cwd=REPO, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        worker = _Worker(process, out)
        worker.reader = asyncio.create_task(_follow(worker))
        workers.append(worker)
    waits = [asyncio.create_task(w.ready.wait()) for w in workers]
    exits = [asyncio.create_task(w.process.wait()) for w in workers]
    try:
        async with asyncio.timeout(READY_TIMEOUT_S):
            while not all(w.ready.is_set() for w in workers):
                await asyncio.wait([*waits, *exits], return_when=asyncio.FIRST_COMPLETED)
                if any(e.done() for e in exits):
                    raise RuntimeError("a pgqueuer worker exited before it was ready")
    except BaseException:
        await _stop_workers(workers)
        raise
    finally:
        for task in [*waits, *exits]:
            task.cancel()
    return workers


async def _stop_workers(workers: list[_Worker]) -> None:
    for worker in workers:
        if worker.process.returncode is None:
            worker.process.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            await asyncio.wait_for(worker.process.wait(), 30)
        except TimeoutError:
            worker.process.kill()
            await worker.process.wait()
        if worker.reader is not None:
            await worker.reader


# Scenarios.


def _read_starts(paths: list[Path], tag: str) -> tuple[dict[int, tuple[float, float]], int]:
    """First (scheduled, started) per job index of this run, and the number of starts."""
    first: dict[int, tuple[float, float]] = {}
    runs = 0
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            run, index, scheduled, started = line.split()
            if run != tag:
                continue
            runs += 1
            key = int(index)
            if key not in first or float(started) < first[key][1]:
                first[key] = (float(scheduled), float(started))
    return first, runs


def _percentile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks, like Postgres's percentile_cont."""
    if not ordered:
        return 0.0
    position = q * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


async def _scenario(
    dsn: str, instants: list[float], workers: int, postgres_pid: int | None = None
) -> dict[str, float]:
    """Run `instants` (epoch seconds, ascending) through `workers` pgqueuer workers.

    With `postgres_pid`, the CPU of the workers and of Postgres (its process tree)
    from the end of the enqueue to the last start, per job: the whole stack's cost of
    running a job, as cluster_bench counts wheel's nodes, executors and Postgres."""
    tag = uuid.uuid4().hex[:12]
    await _reset(dsn)
    cpu: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="pgqueuer-bench-") as directory:
        procs = await _start_workers(dsn, workers, Path(directory))
        roles = {"workers": [w.process.pid for w in procs]}
        if postgres_pid is not None:
            roles["postgres"] = [postgres_pid]
        try:
            async with await _connect(dsn) as conn:
                queries = Queries(PsycopgDriver(conn))
                await _enqueue(queries, tag, instants)
                if time.time() >= instants[0]:
                    raise RuntimeError("enqueuing ran past the first instant; raise margin_s")
                cpu_before = seconds_by_role(roles)
                # Wait for every job's handler to start, or for a minute without progress.
                seen, moved = -1, time.time()
                while True:
                    now, total = time.time(), sum(w.started for w in procs)
                    if total != seen:
                        seen, moved = total, now
                    if total >= len(instants) and not await queries.queued_work(
                        [QueueEntrypoint(ENTRYPOINT)]
                    ):
                        break
                    if now - max(moved, instants[-1]) > STALL_S:
                        break
                    if any(w.process.returncode is not None for w in procs):
                        raise RuntimeError("a pgqueuer worker exited during the scenario")
                    await asyncio.sleep(0.1)
                cpu_after = seconds_by_role(roles)
                cpu = {f"{role}_us_per_run": (cpu_after[role] - cpu_before[role])
                       / len(instants) * 1e6 for role in roles}  # fmt: skip
        finally:
            await _stop_workers(procs)
        first, runs = _read_starts([w.out for w in procs], tag)
    await _reset(dsn)
    lateness = sorted(started - scheduled for scheduled, started in first.values())
    last_start = max((started for _, started in first.values()), default=instants[0])
    span = last_start - instants[0]
    succeeded = len(first)
    return {
        "succeeded": float(succeeded),
        "lost": float(len(instants) - succeeded),
        "duplicates": float(runs - succeeded),
        "p50_ms": _percentile(lateness, 0.5) * 1000,
        "p99_ms": _percentile(lateness, 0.99) * 1000,
        "max_ms": (lateness[-1] if lateness else 0.0) * 1000,
        "span_s": span,
        "rate_per_s": succeeded / span if span > 0 else 0.0,
        "last_start_s": last_start - instants[-1],
        **cpu,
    }


async def spike(
    dsn: str, count: int, *, workers: int = 2, margin_s: float = 10.0,
    postgres_pid: int | None = None,
) -> dict[str, float]:  # fmt: skip
    """`count` jobs all due at T = now + margin_s; last_start_s is the last start - T."""
    at = time.time() + margin_s
    return await _scenario(dsn, [at] * count, workers, postgres_pid)


async def steady(
    dsn: str, rate: int, seconds: int, *, workers: int = 2, margin_s: float = 10.0,
    postgres_pid: int | None = None,
) -> dict[str, float]:  # fmt: skip
    """`rate` jobs a second for `seconds` from T = now + margin_s, evenly spaced;
    last_start_s is the last start - the last scheduled instant."""
    start = time.time() + margin_s
    instants = [start + n / rate for n in range(rate * seconds)]
    return await _scenario(dsn, instants, workers, postgres_pid)


async def registration(dsn: str, count: int, postgres_pid: int | None = None) -> dict[str, float]:
    """Enqueuing `count` jobs (a day ahead), CHUNK per call, from one client: jobs a second,
    and CPU per job of the client (this process) and, with `postgres_pid`, of Postgres."""
    await _reset(dsn)
    roles = {"postgres": [postgres_pid]} if postgres_pid is not None else {}
    async with await _connect(dsn) as conn:
        queries = Queries(PsycopgDriver(conn))
        cpu_before, client_before = seconds_by_role(roles), time.process_time()
        began = time.perf_counter()
        await _enqueue(queries, uuid.uuid4().hex[:12], [time.time() + 86400.0] * count)
        took = time.perf_counter() - began
        cpu_after, client_after = seconds_by_role(roles), time.process_time()
    await _reset(dsn)
    figures = {"jobs_per_s": count / took,
               "client_us_per_job": (client_after - client_before) / count * 1e6}  # fmt: skip
    for role in roles:
        figures[f"{role}_us_per_job"] = (cpu_after[role] - cpu_before[role]) / count * 1e6
    return figures


# Command line.


async def _demo(dsn: str, args: argparse.Namespace) -> None:
    await install(dsn)
    print("spike", args.spike, await spike(dsn, args.spike, workers=args.workers), flush=True)
    print(
        f"steady {args.rate}/s x {args.seconds}s",
        await steady(dsn, args.rate, args.seconds, workers=args.workers),
        flush=True,
    )
    print("registration", args.registration, await registration(dsn, args.registration),
          flush=True)  # fmt: skip


def demo(args: argparse.Namespace) -> None:
    """Start local etcd + durable Postgres, install pgqueuer and run each scenario once."""
    root = Path(tempfile.mkdtemp(prefix="pgq-bench-"))
    os.chmod(root, 0o755)  # Postgres's user must reach its data dir
    services = LocalServices.start(root, durable=True)
    try:
        eventloop.run(_demo(services.postgres.dsn(), args))
    finally:
        services.stop()
        shutil.rmtree(root, ignore_errors=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    worker = commands.add_parser("worker", help="run one pgqueuer worker (used by the scenarios)")
    worker.add_argument("--dsn", required=True)
    worker.add_argument("--out", type=Path, required=True, help="where to write handler starts")
    worker.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    worker.add_argument("--dequeue-timeout-s", type=float, default=DEQUEUE_TIMEOUT.total_seconds())
    run = commands.add_parser("demo", help="local services, then spike, steady, registration")
    run.add_argument("--workers", type=int, default=2)
    run.add_argument("--spike", type=int, default=2000)
    run.add_argument("--rate", type=int, default=500)
    run.add_argument("--seconds", type=int, default=5)
    run.add_argument("--registration", type=int, default=5000)
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse()
    if arguments.command == "worker":
        timeout = timedelta(seconds=arguments.dequeue_timeout_s)
        eventloop.run(_worker(arguments.dsn, arguments.out, arguments.batch_size, timeout))
    else:
        demo(arguments)
