"""Rows per second of the store's hot path at batch sizes 1, 100 and 1,000.

    .venv/bin/python benchmarks/store_bench.py [--rows N] [--fast] [--repeat 3]
        [--price-notify-triggers]

Starts its own Postgres (durable defaults: fsync and synchronous_commit on,
unless --fast), migrates, and runs each operation over N occurrences on one
connection, one batch after another: insert, claim, heartbeat, record
result (success), and the reaper over expired leases. Batch size 1 is what a
per-row design pays (one statement and one commit per execution); the ratio
to batch 1,000 is the point of batching.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import psycopg
import psycopg.sql

from wheel import eventloop
from wheel.local import PostgresServer
from wheel.model.executions import AttemptResult, Fenced, NewOccurrence, Outcome
from wheel.model.ids import ExecutionKey, PartitionId, new_job_id
from wheel.model.jobs import JobSpec, Schedule, ScheduleKind
from wheel.store import Store, migrate
from wheel.store.occurrences import ExecutorBinding

T = TypeVar("T")
BATCHES = (1, 100, 1000)
PARTITION = PartitionId(0)
EXECUTOR = ExecutorBinding("bench-executor", "bench-instance")


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


async def timed(
    items: Sequence[T], size: int, operation: Callable[[Sequence[T]], Awaitable[object]]
) -> float:
    started = time.perf_counter()
    for chunk in chunks(items, size):
        await operation(chunk)
    return len(items) / (time.perf_counter() - started)


async def run_batch(store: Store, rows: int, size: int) -> dict[str, float]:
    tenant = await store.tenants.create(f"bench-{size}-{time.monotonic_ns()}")
    job_id = new_job_id()
    spec = JobSpec("bench", "noop", Schedule(ScheduleKind.CRON, cron="* * * * * *"))
    job = await store.jobs.create(tenant.id, job_id, PARTITION, spec)
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    occurrences = [
        NewOccurrence(
            ExecutionKey(job.id, start + timedelta(milliseconds=n)), tenant.id, PARTITION, 1,
            start + timedelta(milliseconds=n),
        )
        for n in range(rows)
    ]  # fmt: skip
    await store.time_partitions.ensure({start.date(), (start + timedelta(hours=1)).date()})
    epochs = {PARTITION: 1}
    await store.occurrences.set_epochs(epochs, node_id="bench")
    keys = [o.key for o in occurrences]
    claimed: list[Fenced] = []

    async def claim(chunk: Sequence[ExecutionKey]) -> None:
        claimed.extend(
            Fenced(c.key, c.fence)
            for c in await store.occurrences.claim(
                chunk, epochs, lease_s=300, executors=[EXECUTOR] * len(chunk)
            )
        )

    result = {
        "insert": await timed(occurrences, size, store.occurrences.insert),
        "claim": await timed(keys, size, claim),
        "heartbeat": await timed(
            claimed, size, lambda c: store.occurrences.heartbeat(c, executor=EXECUTOR, lease_s=300)
        ),
        "record": await timed(
            claimed,
            size,
            lambda c: store.occurrences.record_results(
                [AttemptResult(f.key, f.fence, Outcome.SUCCEEDED) for f in c]
            ),
        ),
    }
    # The reaper: the same rows again, claimed with leases that have already expired.
    async with store.pool.connection() as conn:
        await conn.execute("UPDATE executions SET status = 'pending' WHERE job_id = %s", (job.id,))
    for chunk in chunks(keys, 1000):
        await store.occurrences.claim(chunk, epochs, lease_s=0)
    started = time.perf_counter()
    reaped = 0
    while batch := await store.occurrences.reap(epochs, limit=size):
        reaped += len(batch)
    result["reap"] = reaped / (time.perf_counter() - started)
    return result


NOTIFY_TRIGGERS = ("executions_notify_insert", "executions_notify_update")


async def set_notify_triggers(dsn: str, enabled: bool) -> None:
    """Turn the notification outbox's triggers on or off (to price them; never in production)."""
    verb = "ENABLE" if enabled else "DISABLE"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        for name in NOTIFY_TRIGGERS:
            await conn.execute(
                psycopg.sql.SQL("ALTER TABLE executions {} TRIGGER {}").format(
                    psycopg.sql.SQL(verb), psycopg.sql.Identifier(name)
                )
            )


async def measure(dsn: str, rows: int, repeat: int) -> dict[int, dict[str, float]]:
    """Median over `repeat` runs of each batch size (the machine is shared and noisy)."""
    await migrate(dsn)
    store = await Store.open(dsn, min_size=1, max_size=2)
    try:
        table = {}
        for size in BATCHES:
            n = min(rows, 2000) if size == 1 else rows
            runs = [await run_batch(store, n, size) for _ in range(repeat)]
            table[size] = {op: statistics.median(r[op] for r in runs) for op in runs[0]}
        return table
    finally:
        await store.close()


async def priced(dsn: str, rows: int, repeat: int) -> tuple[dict[int, dict[str, float]], ...]:
    """The table with the notification triggers, without them, and with them again."""
    with_triggers = await measure(dsn, rows, repeat)
    await set_notify_triggers(dsn, enabled=False)
    without = await measure(dsn, rows, repeat)
    await set_notify_triggers(dsn, enabled=True)
    again = await measure(dsn, rows, repeat)
    return with_triggers, without, again


def main(rows: int, fast: bool, repeat: int, price_triggers: bool) -> None:
    root = Path(tempfile.mkdtemp(prefix="wheel-bench-"))
    root.chmod(0o755)
    server = PostgresServer.start(root / "pg", durable=not fast)
    try:
        if price_triggers:
            tables = eventloop.run(priced(server.dsn(), rows, repeat))
        else:
            tables = (eventloop.run(measure(server.dsn(), rows, repeat)),)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    table = tables[0]
    mode = "fsync=off" if fast else "durable (fsync on)"
    print(
        f"store hot path, rows/s (median of {repeat}), one connection, Postgres {mode}, "
        f"{rows} rows per run (2,000 at batch 1)"
    )
    header = "".join(f"{f'batch {b}':>12}" for b in BATCHES)
    print(f"{'operation':<10}{header}{'1000 vs 1':>11}")
    for op in ["insert", "claim", "heartbeat", "record", "reap"]:
        cells = "".join(f"{table[b][op]:>12,.0f}" for b in BATCHES)
        print(f"{op:<10}{cells}{table[1000][op] / table[1][op]:>10.0f}x")
    if len(tables) == 3:
        with_on, off, on_again = tables
        print(
            "\nnotification triggers on / off, rows/s at batch 1000 (on: mean of before and after)"
        )
        for op in ["insert", "claim", "heartbeat", "record", "reap"]:
            on = (with_on[1000][op] + on_again[1000][op]) / 2
            print(f"{op:<10}{on:>12,.0f}{off[1000][op]:>12,.0f}{on / off[1000][op]:>10.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--fast", action="store_true", help="fsync off, as in the test fixtures")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--price-notify-triggers",
        action="store_true",
        help="also measure with the notification outbox's triggers disabled, and compare",
    )
    args = parser.parse_args()
    main(args.rows, args.fast, args.repeat, args.price_notify_triggers)
