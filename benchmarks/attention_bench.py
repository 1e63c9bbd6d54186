"""What flagging jobs that need attention costs the Jobs list: the one attention statement
against reading the same page of jobs, for a page of 50 and for a tenant of N jobs.

    .venv/bin/python benchmarks/attention_bench.py [--jobs 1000] [--runs 100000] [--repeat 11]

Starts its own Postgres (fsync off, as in the tests), migrates, and makes one tenant with
`--jobs` jobs: a tenth of them with two runs due and waiting (one overdue), a fiftieth with a
dead run, and `--runs` finished runs spread over the jobs as history. Prints the median time
of `Jobs.list` (a page of 50) and of `Executions.attention` for that page and for the whole
tenant, and the ratio of the page's attention to the page's list: what the flag adds to it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from wheel import eventloop
from wheel.local import PostgresServer
from wheel.model.executions import AttemptResult, NewOccurrence, Outcome
from wheel.model.ids import ExecutionKey, PartitionId, new_job_id
from wheel.model.jobs import JobSpec, Schedule, ScheduleKind
from wheel.store import Store, migrate

PARTITION = PartitionId(0)
PAGE = 50


async def median_ms(repeat: int, call: Callable[[], Awaitable[Any]]) -> float:
    await call()  # warm: plans and caches
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        await call()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


async def measure(dsn: str, jobs: int, runs: int, repeat: int) -> dict[str, float]:
    await migrate(dsn)
    store = await Store.open(dsn, min_size=1, max_size=2)
    try:
        tenant = await store.tenants.create(f"bench-{time.monotonic_ns()}")
        spec = JobSpec("x", "report", Schedule(ScheduleKind.CRON, cron="* * * * *"))
        made = [
            await store.jobs.create(
                tenant.id, new_job_id(), PARTITION, JobSpec(f"job-{n}", spec.task_type,
                                                            spec.schedule),
            )
            for n in range(jobs)
        ]  # fmt: skip
        now = datetime.now(UTC).replace(microsecond=0)
        history_start = now - timedelta(hours=6)
        await store.time_partitions.ensure(
            {(history_start + timedelta(hours=h)).date() for h in range(8)}
        )

        def occurrence(job_index: int, at: datetime) -> NewOccurrence:
            job = made[job_index]
            return NewOccurrence(ExecutionKey(job.id, at), tenant.id, PARTITION, 1, at)

        history = [
            occurrence(n % jobs, history_start + timedelta(seconds=n // jobs, milliseconds=n % 997))
            for n in range(runs)
        ]
        waiting = [occurrence(n, now - timedelta(minutes=m)) for n in range(0, jobs, 10)
                   for m in (0.5, 3)]  # fmt: skip
        dead = [occurrence(n, now - timedelta(seconds=20)) for n in range(0, jobs, 50)]
        epochs = {PARTITION: 1}
        await store.occurrences.set_epochs(epochs, node_id="bench")
        for start in range(0, len(history), 1000):
            chunk = history[start : start + 1000]
            await store.occurrences.insert(chunk)
            claimed = await store.occurrences.claim([o.key for o in chunk], epochs, lease_s=300)
            await store.occurrences.record_results(
                [AttemptResult(c.key, c.fence, Outcome.SUCCEEDED) for c in claimed]
            )
        await store.occurrences.insert(dead)
        for _ in range(3):  # the job's default attempts
            claimed = await store.occurrences.claim([o.key for o in dead], epochs, lease_s=300)
            await store.occurrences.record_results(
                [AttemptResult(c.key, c.fence, Outcome.FAILED, error="boom") for c in claimed]
            )
            dead = [o for o in dead if o.key in {c.key for c in claimed}]
        await store.occurrences.insert(waiting)
        async with store.pool.connection() as conn:
            await conn.execute("ANALYZE")

        page, _ = await store.jobs.list(tenant.id, page_size=PAGE)
        ids = [j.id for j in page]
        return {
            "list a page": await median_ms(
                repeat, lambda: store.jobs.list(tenant.id, page_size=PAGE)
            ),
            "attention, the page": await median_ms(
                repeat, lambda: store.executions.attention(tenant.id, ids, datetime.now(UTC))
            ),
            "attention, the tenant": await median_ms(
                repeat, lambda: store.executions.attention(tenant.id, None, datetime.now(UTC))
            ),
        }
    finally:
        await store.close()


def main(jobs: int, runs: int, repeat: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="wheel-bench-"))
    root.chmod(0o755)
    server = PostgresServer.start(root / "pg", durable=False)
    try:
        table = eventloop.run(measure(server.dsn(), jobs, runs, repeat))
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"attention flags, ms (median of {repeat}), {jobs:,} jobs, {runs:,} finished runs")
    for name, ms in table.items():
        print(f"{name:<24}{ms:>8.1f}")
    ratio = table["attention, the page"] / table["list a page"]
    print(f"{'page: attention / list':<24}{ratio:>8.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    main(args.jobs, args.runs, args.repeat)
