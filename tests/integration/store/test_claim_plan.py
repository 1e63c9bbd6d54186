"""The claim and record statements cost a probe per key, however much a node owns.

A realistic case: 256 partitions owned, 100,000 pending occurrences over four
day partitions. Index probes are counted from `pg_stat_user_indexes` around
one claim, one heartbeat and one record of 1,000 keys: a plan that loops over
the owned partitions or over the day partitions per key (what the planner
chose when it guessed one owned partition, not 256) multiplies them by
hundreds. No timing is asserted.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from wheel.model.executions import AttemptResult, Outcome
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.store import Store
from wheel.store.days import by_day, span
from wheel.store.queries import sql

PARTITIONS = 256
JOBS = 2000
RUNS_PER_JOB = 50
DAYS = 4
BATCH = 1000

_JOBS = """
INSERT INTO jobs (id, tenant_id, name, task_type, schedule_kind, cron, max_attempts,
                  backoff_base_ms, backoff_cap_ms, idempotent, misfire, misfire_grace_ms,
                  misfire_replay_cap, overlap, timeout_ms, partition, materialised_version)
SELECT gen_random_uuid(), %(tenant)s, 'plan ' || n, 'work', 'cron', '* * * * *', 3, 1000,
       300000, true, 'fire_once', 60000, 10, 'allow', 3600000, n %% 256, 1
FROM generate_series(0, %(jobs)s - 1) AS n
"""
_RUNS = """
INSERT INTO executions (job_id, scheduled_for, tenant_id, partition, job_version, fire_at)
SELECT j.id, r.at, j.tenant_id, j.partition, 1, r.at
FROM jobs j
CROSS JOIN LATERAL (
    SELECT %(start)s::timestamptz
           + make_interval(secs => (k * %(jobs)s + (abs(hashtext(j.id::text)) %% %(jobs)s))
                                   * %(spacing_s)s) AS at
    FROM generate_series(0, %(runs)s - 1) AS k
) r
WHERE j.tenant_id = %(tenant)s
"""
_PROBES = """
SELECT coalesce(sum(idx_scan) FILTER (WHERE relname LIKE 'executions_%%'), 0),
       coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'jobs_pkey'), 0)
FROM pg_stat_user_indexes
"""


_SCANS = """
SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_user_tables WHERE relname LIKE 'executions_%%'
"""


def probes(dsn: str) -> tuple[int, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(_PROBES).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def seq_scans(dsn: str) -> int:
    """Whole-partition scans of executions so far (a probe per key makes none)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(_SCANS).fetchone()
    assert row is not None
    return int(row[0])


def counted(
    dsn: str, query: Any, batches: list[dict[str, object]]
) -> tuple[list[tuple[Any, ...]], int, int]:
    """Run the statement once per batch; the rows and the executions and jobs index
    probes they made."""
    before, scanned = probes(dsn), seq_scans(dsn)
    rows: list[tuple[Any, ...]] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for params in batches:
            rows += conn.execute(query, params, binary=True).fetchall()
        conn.execute("SELECT pg_stat_force_next_flush()")
    after = probes(dsn)
    assert seq_scans(dsn) == scanned, "a partition was scanned whole, not probed by key"
    return rows, after[0] - before[0], after[1] - before[1]


@pytest.fixture
async def crowded(store: Store, database_dsn: str) -> tuple[str, list[ExecutionKey], TenantId]:
    """100,000 pending runs over four days in 256 partitions, every partition owned."""
    owner = await store.tenants.create("crowded", max_in_flight=1_000_000)
    start = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start += timedelta(days=1)
    await store.time_partitions.ensure({(start + timedelta(days=d)).date() for d in range(DAYS)})
    spacing_s = DAYS * 86_400 / (JOBS * RUNS_PER_JOB)
    with psycopg.connect(database_dsn, autocommit=True) as conn:
        conn.execute(_JOBS, {"tenant": owner.id, "jobs": JOBS})
        conn.execute(_RUNS, {"tenant": owner.id, "jobs": JOBS, "runs": RUNS_PER_JOB,
                             "start": start, "spacing_s": spacing_s})  # fmt: skip
        conn.execute("ANALYZE")
        rows = conn.execute(
            "SELECT job_id, scheduled_for FROM executions"
            " ORDER BY md5(job_id::text || scheduled_for) LIMIT %s",
            (BATCH,),
        ).fetchall()
    epochs = {PartitionId(p): 7 for p in range(PARTITIONS)}
    assert len(await store.occurrences.set_epochs(epochs, node_id="node-a")) == PARTITIONS
    return database_dsn, [ExecutionKey(JobId(job), at) for job, at in rows], owner.id


async def test_a_claim_a_heartbeat_and_a_record_probe_each_key_a_few_times(
    crowded: tuple[str, list[ExecutionKey], TenantId],
) -> None:
    dsn, keys, _ = crowded
    # The store sends one statement per day (wheel.store.days); so does this test.
    days = by_day(keys, lambda k: k.scheduled_for)
    assert len(days) == DAYS, "the keys span every day partition"
    claims = [
        {
            "partitions": list(range(PARTITIONS)),
            "epochs": [7] * PARTITIONS,
            "job_ids": [k.job_id for k in day],
            "scheduled_fors": [k.scheduled_for for k in day],
            "refuse_overshoot": True,
            "executor_ids": ["ex"] * len(day),
            "instances": ["i"] * len(day),
            "lease_s": 30.0,
            "ahead_s": 10 * 86_400.0,
            "waited": [""] * len(day),
            **span([k.scheduled_for for k in day]),
        }
        for day in days
    ]
    rows, run_probes, job_probes = counted(dsn, sql("claim"), claims)
    claimed = [r for r in rows if r[0] == "claimed"]
    assert len(claimed) == BATCH
    # The key's probe and the update's: two per key (a little slack for catalog lookups).
    assert run_probes <= 2 * BATCH + 50, f"{run_probes} executions index probes for {BATCH} keys"
    assert job_probes <= 2 * BATCH + 50, f"{job_probes} jobs index probes for {BATCH} keys"

    fences = {(job_id, at): fence for _, job_id, at, _, _, fence, *_ in claimed}
    beats = [
        {
            "job_ids": [k.job_id for k in day],
            "scheduled_fors": [k.scheduled_for for k in day],
            "fences": [fences[(k.job_id, k.scheduled_for)] for k in day],
            "executor_id": "ex",
            "instance": "i",
            "lease_s": 30.0,
            **span([k.scheduled_for for k in day]),
        }
        for day in by_day(sorted(ExecutionKey(JobId(j), a) for j, a in fences),
                          lambda k: k.scheduled_for)
    ]  # fmt: skip
    rows, run_probes, _ = counted(dsn, sql("heartbeat"), beats)
    assert len(rows) == BATCH
    assert run_probes <= 2 * BATCH + 50, f"{run_probes} executions index probes for {BATCH} beats"

    results = [AttemptResult(ExecutionKey(JobId(j), a), f, Outcome.SUCCEEDED,
                             executor_id="ex", executor_instance="i")
               for (j, a), f in sorted(fences.items())]  # fmt: skip
    records = [
        {
            "job_ids": [r.key.job_id for r in day],
            "scheduled_fors": [r.key.scheduled_for for r in day],
            "fences": [r.fence for r in day],
            "outcomes": [r.outcome.value for r in day],
            "executors": ["ex"] * len(day),
            "instances": ["i"] * len(day),
            "started": [None] * len(day),
            "finished": [None] * len(day),
            "errors": [None] * len(day),
            **span([r.key.scheduled_for for r in day]),
        }
        for day in by_day(results, lambda r: r.key.scheduled_for)
    ]
    rows, run_probes, job_probes = counted(dsn, sql("record_results"), records)
    assert sum(1 for r in rows if r[0]) == BATCH
    assert run_probes <= 2 * BATCH + 50, f"{run_probes} executions index probes for {BATCH} results"
    assert job_probes <= BATCH + 50, f"{job_probes} jobs index probes for {BATCH} results"


def jobs_scans(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'jobs'"
        ).fetchone()
    assert row is not None
    return int(row[0])


async def test_an_insert_of_occurrences_probes_their_jobs_not_the_whole_table(
    crowded: tuple[str, list[ExecutionKey], TenantId],
) -> None:
    """A hash join read every job per insert (the materialiser's and each registration's):
    its cost grew with the jobs table, not with the batch."""
    dsn, _, owner = crowded
    with psycopg.connect(dsn, autocommit=True) as conn:
        jobs = conn.execute(
            "SELECT id, partition FROM jobs WHERE tenant_id = %s LIMIT %s", (owner, BATCH)
        ).fetchall()
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1, hours=1)
    insert = {
        "job_ids": [job_id for job_id, _ in jobs],
        "scheduled_fors": [at] * len(jobs),
        "tenant_ids": [owner] * len(jobs),
        "partitions": [partition for _, partition in jobs],
        "job_versions": [1] * len(jobs),
        "fire_ats": [at] * len(jobs),
        "priorities": [0] * len(jobs),
        "triggers": ["schedule"] * len(jobs),
        "statuses": ["pending"] * len(jobs),
        "reasons": [None] * len(jobs),
    }
    scanned = jobs_scans(dsn)
    rows, _, job_probes = counted(dsn, sql("insert_occurrences"), [insert])
    assert len(rows) == BATCH
    assert jobs_scans(dsn) == scanned, "the jobs table was scanned whole, not probed by key"
    assert job_probes <= BATCH + 50, f"{job_probes} jobs index probes for {BATCH} occurrences"
