"""Postgres's cost per run of the store's hot path: time, CPU, WAL and row versions.

    PYTHONPATH=src:. .venv/bin/python benchmarks/postgres_cost_bench.py [--runs 20000]
        [--batch 1000] [--fast] [--statements 12] [--concurrency-keys K]

Starts its own Postgres with pg_stat_statements (track all, planning too) and
pg_walinspect, migrates, and drives the store's real statements in batches on
one connection, phase by phase, over the same runs: registration of one-off
jobs (`register_jobs`: a jobs row and an executions row each), insertion of
cron occurrences (`Occurrences.insert`, the materialiser's), then the
one-offs' claim, heartbeat and recorded success. Per phase it prints, per run:
the backend's CPU (from /proc: the one connection's process), the whole
Postgres tree's CPU (walwriter, checkpointer, autovacuum included), statement
time by statement (pg_stat_statements: top level, and nested inside the
functions), WAL bytes and records by relation and kind (pg_walinspect), and
row versions written (pg_stat_user_tables: inserts, updates, HOT updates).
Autovacuum is off: the last phase vacuums executions and attempts, the work
autovacuum would do later for the dead row versions and index entries.
Durable (fsync on) unless --fast. One warm-up round runs first, unmeasured.
With --concurrency-keys K the one-offs hold K concurrency keys (the n-th job
`key-<n mod K>`, a limit no claim reaches): the keyed path's price.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from benchmarks.cpu_accounting import tree_seconds

from wheel import eventloop
from wheel.api.server.registration import register_jobs
from wheel.local import PostgresServer
from wheel.model.concurrency import MAX_LIMIT
from wheel.model.executions import AttemptResult, Fenced, NewOccurrence, Outcome
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId, new_job_id, partition_of
from wheel.model.jobs import JobSpec, Policies, Schedule, ScheduleKind
from wheel.store import Store, migrate
from wheel.store.occurrences import ExecutorBinding

T = TypeVar("T")
PARTITIONS = 256
EXECUTOR = ExecutorBinding("bench-executor", "bench-instance")
OBSERVER = "bench_observer"
_TICKS = os.sysconf("SC_CLK_TCK")
# Statements of the bench's own bookkeeping on the store's connection.
_OWN = ("pg_stat_force_next_flush", "pg_backend_pid")


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def process_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass
class Phase:
    name: str
    runs: int
    wall_s: float = 0.0
    backend_s: float = 0.0
    tree_s: float = 0.0
    statements: list[tuple[bool, str, int, float, float, int]] = field(default_factory=list)
    """(top level, text, calls, exec ms, plan ms, WAL bytes) per statement."""
    wal_bytes: int = 0
    wal_by_relation: list[tuple[str, str, int, int]] = field(default_factory=list)
    """(relation, resource manager/record type, records, bytes)."""
    tuples: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """table: (inserted, updated, HOT-updated)."""


class Observer:
    """Reads the counters from a connection of its own role (filtered out of the figures)."""

    def __init__(
        self, dsn: str, store: Store, backend_pid: int, postmaster_pid: int, perf: Path | None
    ) -> None:
        self._conn = psycopg.connect(dsn, autocommit=True)
        self._perf = perf
        self._store = store
        self._backend = backend_pid
        self._postmaster = postmaster_pid

    async def measure(self, phase: Phase, work: Callable[[], Awaitable[None]]) -> Phase:
        await self._flush()
        tuples = self._tuples()
        (start_lsn,) = self._one("SELECT pg_current_wal_insert_lsn()")
        self._conn.execute("SELECT pg_stat_statements_reset()")
        profiler = None
        if self._perf is not None:
            self._perf.mkdir(parents=True, exist_ok=True)
            out = self._perf / f"{phase.name.split()[0]}.data"
            # PERF_CALL_GRAPH="--call-graph dwarf" when the build has no frame pointers.
            graph = os.environ.get("PERF_CALL_GRAPH", "-g").split()
            profiler = await asyncio.create_subprocess_exec(
                "perf", "record", "-q", *graph, "-p", str(self._backend), "-o", str(out)
            )
            await asyncio.sleep(0.5)
        backend, tree, wall = (process_seconds(self._backend), tree_seconds(self._postmaster),
                               time.perf_counter())  # fmt: skip
        await work()
        phase.wall_s = time.perf_counter() - wall
        phase.backend_s = process_seconds(self._backend) - backend
        phase.tree_s = tree_seconds(self._postmaster) - tree
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            await profiler.wait()
        await self._flush()
        (end_lsn,) = self._one("SELECT pg_current_wal_insert_lsn()")
        phase.wal_bytes = int(self._one("SELECT %s::pg_lsn - %s::pg_lsn", (end_lsn, start_lsn))[0])
        after = self._tuples()
        phase.tuples = {
            rel: (ins - b[0], upd - b[1], hot - b[2])
            for rel, (ins, upd, hot) in after.items()
            if (b := tuples.get(rel, (0, 0, 0))) != (ins, upd, hot)
        }
        phase.statements = [
            (top, " ".join(text.split()), calls, exec_ms, plan_ms, int(wal))
            for top, text, calls, exec_ms, plan_ms, wal in self._conn.execute(
                """
                SELECT s.toplevel, s.query, s.calls, s.total_exec_time, s.total_plan_time,
                       s.wal_bytes
                FROM pg_stat_statements s
                WHERE s.userid <> (SELECT oid FROM pg_roles WHERE rolname = %s)
                  AND s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                ORDER BY s.total_exec_time + s.total_plan_time DESC
                """,
                (OBSERVER,),
            ).fetchall()
            if not any(own in text for own in _OWN)
        ]
        try:
            phase.wal_by_relation = self._wal_by_relation(start_lsn, end_lsn)
        except psycopg.Error as exc:  # e.g. no record starts in the range read
            print(f"{phase.name}: WAL by relation unavailable: {exc}")
        return phase

    def _wal_by_relation(self, start_lsn: str, end_lsn: str) -> list[tuple[str, str, int, int]]:
        return [
            (rel, kind, int(n), int(size))
            for rel, kind, n, size in self._conn.execute(
                """
                WITH b AS (
                    SELECT w.resource_manager || '/' || w.record_type AS kind,
                           w.record_length, w.block_id, w.start_lsn,
                           pg_filenode_relation(
                               CASE WHEN w.reltablespace = (SELECT oid FROM pg_tablespace
                                                            WHERE spcname = 'pg_default')
                                    THEN 0 ELSE w.reltablespace END,
                               w.relfilenode) AS rel
                    FROM pg_get_wal_block_info(%s::pg_lsn, %s::pg_lsn) w
                    WHERE w.block_id = 0
                )
                SELECT coalesce(p.relname, c.relname, '?') AS relation, b.kind, count(*),
                       sum(b.record_length)
                FROM b
                LEFT JOIN pg_class c ON c.oid = b.rel
                LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
                LEFT JOIN pg_class p ON p.oid = i.inhparent
                GROUP BY 1, 2
                ORDER BY 4 DESC
                """,
                (start_lsn, end_lsn),
            ).fetchall()
        ]

    async def _flush(self) -> None:
        async with self._store.pool.connection() as conn:
            await conn.execute("SELECT pg_stat_force_next_flush()")

    def _one(self, query: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...]:
        row = self._conn.execute(query, params).fetchone()
        assert row is not None
        return row

    def _tuples(self) -> dict[str, tuple[int, int, int]]:
        rows = self._conn.execute(
            """
            SELECT coalesce(p.relname, c.relname), sum(s.n_tup_ins), sum(s.n_tup_upd),
                   sum(s.n_tup_hot_upd)
            FROM pg_stat_user_tables s
            JOIN pg_class c ON c.oid = s.relid
            LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
            LEFT JOIN pg_class p ON p.oid = i.inhparent
            GROUP BY 1
            """
        ).fetchall()
        return {rel: (int(i), int(u), int(h)) for rel, i, u, h in rows}

    def close(self) -> None:
        self._conn.close()


async def round_of(
    store: Store, tenant: TenantId, runs: int, batch: int, at: datetime,
    observer: Observer | None, concurrency_keys: int = 0,
) -> list[Phase]:  # fmt: skip
    """One pass over `runs` runs: register, insert, claim, heartbeat, record."""
    phases: list[Phase] = []

    async def phase(name: str, n: int, work: Callable[[], Awaitable[None]]) -> None:
        if observer is None:
            await work()
        else:
            phases.append(await observer.measure(Phase(name, n), work))

    stamp = time.monotonic_ns()
    specs = [
        JobSpec(f"one-off {stamp} {n}", "noop", Schedule(ScheduleKind.AT, at=at),
                policies=Policies(concurrency_key=f"key-{n % concurrency_keys}",
                                  concurrency_limit=MAX_LIMIT)
                if concurrency_keys else Policies())
        for n in range(runs)
    ]  # fmt: skip
    keys: list[ExecutionKey] = []

    async def register() -> None:
        for part in chunks(specs, batch):
            made = await register_jobs(store, tenant, part, partitions=PARTITIONS)
            keys.extend(ExecutionKey(r.job.id, at) for r in made.registered)

    await phase("register (create_jobs)", runs, register)

    # The materialiser's inserts: a cron job's occurrences, one a second.
    cron = JobSpec(f"cron {stamp}", "noop", Schedule(ScheduleKind.CRON, cron="* * * * *"))
    cron_jobs = [
        (job_id, partition_of(job_id, PARTITIONS))
        for job_id in (JobId(new_job_id()) for _ in range(max(1, runs // 100)))
    ]
    for n, (job_id, partition) in enumerate(cron_jobs):
        spec = JobSpec(f"{cron.name} {n}", cron.task_type, cron.schedule)
        await store.jobs.create(tenant, job_id, partition, spec)
    occurrences = [
        NewOccurrence(ExecutionKey(job_id, at + timedelta(seconds=s)), tenant, partition, 1,
                      at + timedelta(seconds=s))
        for s in range(100) for job_id, partition in cron_jobs
    ][:runs]  # fmt: skip

    async def insert() -> None:
        for part in chunks(occurrences, batch):
            await store.occurrences.insert(part)

    await phase("insert (materialiser)", len(occurrences), insert)

    epochs = {PartitionId(p): 1 for p in range(PARTITIONS)}
    claimed: list[Fenced] = []

    async def claim() -> None:
        for part in chunks(sorted(keys), batch):
            done = await store.occurrences.claim(
                part, epochs, lease_s=300, executors=[EXECUTOR] * len(part)
            )
            claimed.extend(Fenced(c.key, c.fence) for c in done)

    await phase("claim", runs, claim)
    if len(claimed) != runs:
        raise SystemExit(f"claimed {len(claimed)} of {runs}")

    async def heartbeat() -> None:
        for part in chunks(claimed, batch):
            refused = await store.occurrences.heartbeat(part, executor=EXECUTOR, lease_s=300)
            assert not refused, refused[:3]

    await phase("heartbeat", runs, heartbeat)

    async def record() -> None:
        now = datetime.now(UTC)
        for part in chunks(claimed, batch):
            outcome = await store.occurrences.record_results(
                AttemptResult(f.key, f.fence, Outcome.SUCCEEDED, EXECUTOR.executor_id, now, now,
                              None, EXECUTOR.instance)
                for f in part
            )  # fmt: skip
            assert not outcome.stale, outcome.stale[:3]

    await phase("record (success)", runs, record)

    async def vacuum() -> None:
        # What autovacuum pays later for the dead row versions and index entries.
        async with store.pool.connection() as conn:
            await conn.execute("VACUUM (ANALYZE false) executions, attempts")

    await phase("vacuum (executions)", runs, vacuum)
    return phases


def report(phases: list[Phase], statements: int) -> None:
    per_run = ("claim", "heartbeat", "record (success)", "vacuum (executions)")
    print("\nsummary, per run (µs of CPU, bytes of WAL)")
    print(f"{'phase':<24}{'runs':>7}{'runs/s':>9}{'backend µs':>12}{'tree µs':>10}"
          f"{'stmt µs':>9}{'WAL B':>8}{'ins':>6}{'upd':>6}{'hot':>6}")  # fmt: skip
    total = [0.0, 0.0, 0.0, 0.0]
    for p in phases:
        stmt_ms = sum(exec_ms + plan_ms for top, _, _, exec_ms, plan_ms, _ in p.statements if top)
        ins = sum(t[0] for t in p.tuples.values())
        upd = sum(t[1] for t in p.tuples.values())
        hot = sum(t[2] for t in p.tuples.values())
        figures = (p.backend_s * 1e6 / p.runs, p.tree_s * 1e6 / p.runs,
                   stmt_ms * 1e3 / p.runs, p.wal_bytes / p.runs)  # fmt: skip
        if p.name in per_run:
            total = [a + b for a, b in zip(total, figures, strict=True)]
        print(f"{p.name:<24}{p.runs:>7}{p.runs / p.wall_s:>9,.0f}{figures[0]:>12.1f}"
              f"{figures[1]:>10.1f}{figures[2]:>9.1f}{figures[3]:>8.0f}{ins / p.runs:>6.2f}"
              f"{upd / p.runs:>6.2f}{hot / p.runs:>6.2f}")  # fmt: skip
    print(f"{'claim+heartbeat+record+vacuum':<40}{total[0]:>12.1f}{total[1]:>10.1f}{total[2]:>9.1f}"
          f"{total[3]:>8.0f}")  # fmt: skip
    for p in phases:
        print(f"\n== {p.name}: {p.runs} runs")
        print("  row versions per run (inserted / updated / HOT):")
        for rel, (ins, upd, hot) in sorted(p.tuples.items()):
            print(f"    {rel:<28}{ins / p.runs:>7.2f}{upd / p.runs:>7.2f}{hot / p.runs:>7.2f}")
        print(f"  statements (µs per run: exec + plan; WAL B/run), top {statements}:")
        for top, text, calls, exec_ms, plan_ms, wal in p.statements[:statements]:
            mark = "" if top else "  > "
            print(f"    {(exec_ms + plan_ms) * 1e3 / p.runs:>8.1f} = {exec_ms * 1e3 / p.runs:>7.1f}"
                  f" + {plan_ms * 1e3 / p.runs:>6.1f}{wal / p.runs:>7.0f}B {calls:>6}x  "
                  f"{mark}{text[:90]}")  # fmt: skip
        print("  WAL per run by relation and record (records, bytes):")
        for rel, kind, n, size in p.wal_by_relation[:14]:
            print(f"    {rel:<28}{kind:<26}{n / p.runs:>7.2f}{size / p.runs:>8.0f}")


async def bench(
    dsn: str, observer_dsn: str, postmaster: int, runs: int, batch: int, rounds: int,
    perf: Path | None, setup: Sequence[str], concurrency_keys: int = 0,
) -> list[list[Phase]]:  # fmt: skip
    await migrate(dsn)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        for statement in setup:  # to price a change: e.g. DROP INDEX ...
            await conn.execute(statement)
    store = await Store.open(dsn, min_size=1, max_size=1)
    try:
        async with store.pool.connection() as conn:
            row = await (await conn.execute("SELECT pg_backend_pid()")).fetchone()
            assert row is not None
            backend = int(row[0])
        tenant = await store.tenants.create("bench", max_in_flight=1_000_000)
        await store.occurrences.set_epochs(
            {PartitionId(p): 1 for p in range(PARTITIONS)}, node_id="bench"
        )
        # The runs' instant: ahead, within today (UTC) if it can be.
        now = datetime.now(UTC)
        at = now.replace(microsecond=0) + timedelta(minutes=30)
        if at.date() != now.date():
            at = now.replace(microsecond=0) + timedelta(hours=2)
        observer = Observer(observer_dsn, store, backend, postmaster, perf)
        try:
            warm_up = min(runs, 2 * batch)
            await round_of(store, tenant.id, warm_up, batch, at, None, concurrency_keys)
            await asyncio.sleep(1)
            return [
                await round_of(
                    store,
                    tenant.id,
                    runs,
                    batch,
                    at + timedelta(seconds=r),
                    observer,
                    concurrency_keys,
                )
                for r in range(1, rounds + 1)
            ]
        finally:
            observer.close()
    finally:
        await store.close()


def main(
    runs: int, batch: int, fast: bool, statements: int, rounds: int, perf: Path | None,
    setup: Sequence[str], concurrency_keys: int = 0,
) -> None:  # fmt: skip
    root = Path(tempfile.mkdtemp(prefix="wheel-pgcost-"))
    root.chmod(0o755)
    server = PostgresServer.start(root / "pg", durable=not fast)
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            for name, value in [
                ("shared_preload_libraries", "pg_stat_statements"),
                ("pg_stat_statements.track", "all"),
                ("pg_stat_statements.track_planning", "on"),
                ("pg_stat_statements.max", "5000"),
                # Off, so that its work lands in the vacuum phase, not in a random one.
                ("autovacuum", "off"),
            ]:
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        server.stop()
        server = PostgresServer.start(root / "pg", durable=not fast)
        server.ensure_database("bench")
        with psycopg.connect(server.dsn("bench"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
            conn.execute("CREATE EXTENSION pg_walinspect")
            conn.execute(f"CREATE ROLE {OBSERVER} SUPERUSER LOGIN")
        observer_dsn = server.dsn("bench").replace("postgres@", f"{OBSERVER}@", 1)
        results = eventloop.run(
            bench(
                server.dsn("bench"),
                observer_dsn,
                server.process.pid,
                runs,
                batch,
                rounds,
                perf,
                setup,
                concurrency_keys,
            )
        )
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    mode = "fsync=off" if fast else "durable (fsync on)"
    for n, phases in enumerate(results, 1):
        print(f"\nround {n} of {rounds}: {runs} runs in batches of {batch}, Postgres {mode}")
        report(phases, statements)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--fast", action="store_true", help="fsync off, as in the test fixtures")
    parser.add_argument("--statements", type=int, default=12, help="statements shown per phase")
    parser.add_argument(
        "--perf", type=Path, help="profile the backend with `perf record -g`, a file per phase here"
    )
    parser.add_argument(
        "--setup-sql", action="append", default=[],
        help="a statement run after migrating (repeatable): to price a schema change",
    )  # fmt: skip
    parser.add_argument(
        "--concurrency-keys", type=int, default=0,
        help="the one-offs hold this many concurrency keys (0: none), a limit never reached",
    )  # fmt: skip
    args = parser.parse_args()
    main(args.runs, args.batch, args.fast, args.statements, args.rounds, args.perf,
         args.setup_sql, args.concurrency_keys)  # fmt: skip
