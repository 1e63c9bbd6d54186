"""Materialising 10,000 cron jobs one hour ahead: rows/s, against croniter on the same work.

    .venv/bin/python benchmarks/materialiser_bench.py [--jobs N]

Jobs are a third every minute, a third every five minutes, a third hourly at
a hashed minute (H). Two figures: the expansion alone (wheel's expander vs a
croniter get_next loop, pure CPU, UTC and Europe/London), and the whole
materialiser against a local Postgres (durable), insert and cursor updates
included.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from croniter import croniter

from wheel import eventloop
from wheel.local import PostgresServer
from wheel.model.ids import PartitionId, new_job_id
from wheel.model.jobs import JobSpec, Schedule, ScheduleKind
from wheel.schedule import compile_schedule
from wheel.scheduler.materialiser import Materialiser
from wheel.store import Store, migrate

EXPRESSIONS = ["* * * * *", "*/5 * * * *", "H * * * *"]
HOUR = timedelta(hours=1)
PARTITIONS = [PartitionId(p) for p in range(16)]


def expansion(jobs: int, zone: str) -> tuple[float, float, int]:
    start = datetime(2027, 6, 1, 12, 0, 30, tzinfo=UTC)
    ids = [uuid.uuid4() for _ in range(jobs)]
    began = time.perf_counter()
    rows = 0
    for n, job_id in enumerate(ids):
        schedule = Schedule(ScheduleKind.CRON, cron=EXPRESSIONS[n % 3], time_zone=zone)
        rows += len(compile_schedule(schedule, job_id, now=start).runs(start, start + HOUR))
    mine = time.perf_counter() - began
    tz = ZoneInfo(zone)
    began = time.perf_counter()
    theirs_rows = 0
    for n in range(jobs):
        text = EXPRESSIONS[n % 3].replace("H", str(n % 60))
        it = croniter(text, start.astimezone(tz))
        while it.get_next(datetime) < start + HOUR:
            theirs_rows += 1
    theirs = time.perf_counter() - began
    assert abs(theirs_rows - rows) <= jobs // 50, (rows, theirs_rows)
    return rows / mine, theirs_rows / theirs, rows


async def materialise(dsn: str, jobs: int) -> tuple[float, int, float]:
    await migrate(dsn)
    store = await Store.open(dsn, min_size=1, max_size=4)
    try:
        tenant = await store.tenants.create("bench")
        for n in range(jobs):
            schedule = Schedule(ScheduleKind.CRON, cron=EXPRESSIONS[n % 3])
            spec = JobSpec(f"job {n}", "noop", schedule)
            await store.jobs.create(tenant.id, new_job_id(), PartitionId(n % 16), spec)
        now = datetime.now(UTC)
        materialiser = Materialiser(store, horizon=HOUR, clock=lambda: now)
        began = time.perf_counter()
        report = await materialiser.run(PARTITIONS)
        elapsed = time.perf_counter() - began
        assert report.jobs == jobs
        return report.pending / elapsed, report.pending, elapsed
    finally:
        await store.close()


def main(jobs: int) -> None:
    print(f"expansion of {jobs:,} jobs one hour ahead (rows/s, CPU only)")
    print(f"{'zone':<16}{'wheel':>12}{'croniter':>12}{'ratio':>8}{'rows':>10}")
    for zone in ("UTC", "Europe/London"):
        mine, theirs, rows = expansion(jobs, zone)
        print(f"{zone:<16}{mine:>12,.0f}{theirs:>12,.0f}{mine / theirs:>7.1f}x{rows:>10,}")
    root = Path(tempfile.mkdtemp(prefix="wheel-bench-"))
    root.chmod(0o755)
    server = PostgresServer.start(root / "pg")
    try:
        rate, rows, elapsed = eventloop.run(materialise(server.dsn(), jobs))
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"materialiser, Postgres durable: {rows:,} rows for {jobs:,} jobs in {elapsed:.2f} s "
          f"= {rate:,.0f} rows/s")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=10_000)
    main(parser.parse_args().jobs)
