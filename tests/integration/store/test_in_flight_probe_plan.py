"""A job's in-flight probe reads the job's leased runs; the reaper, a partition's leases.

The claim probes the runs in flight of every key whose job limits overlap (so do the
queue's skip and the in-flight lookup), by job, in each day partition; the reaper
reads each owned partition's leases by expiry. A day partition analysed while all its
runs were pending (a spike registered ahead) has statistics that make both partial
indexes of leased runs look empty: when either could serve either query, the planner
took the other one whole and filtered it, and under a spike each key's probe (each
partition's, for the reaper) walked every run in flight that day, the Postgres CPU of
a run growing with the spike. Index tuples read are counted from
`pg_stat_user_indexes` around a claim of 1,000 keys while 1,000 runs of the same day
are in flight, and around the probes and a reaper pass then. No timing is asserted.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from wheel.model.ids import PartitionId
from wheel.store import Store
from wheel.store.days import span
from wheel.store.queries import sql

PARTITIONS = 64
JOBS = 2000
BATCH = 1000

_JOBS = """
INSERT INTO jobs (id, tenant_id, name, task_type, schedule_kind, cron, max_attempts,
                  backoff_base_ms, backoff_cap_ms, idempotent, misfire, misfire_grace_ms,
                  misfire_replay_cap, overlap, timeout_ms, partition, materialised_version)
SELECT gen_random_uuid(), %(tenant)s, 'spike ' || n, 'work', 'cron', '* * * * *', 3, 1000,
       300000, true, 'fire_once', 60000, 10, 'skip', 3600000, n %% 64, 1
FROM generate_series(0, %(jobs)s - 1) AS n
"""
_RUNS = """
INSERT INTO executions (job_id, scheduled_for, tenant_id, partition, job_version, fire_at)
SELECT j.id, %(at)s, j.tenant_id, j.partition, 1, %(at)s
FROM jobs j
WHERE j.tenant_id = %(tenant)s
"""
_TUPLES = """
SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes
WHERE relname LIKE 'executions_%%'
"""


def tuples_read(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(_TUPLES).fetchone()
    assert row is not None
    return int(row[0])


def claim(keys: list[tuple[object, datetime]]) -> dict[str, object]:
    return {
        "partitions": list(range(PARTITIONS)),
        "epochs": [7] * PARTITIONS,
        "job_ids": [job for job, _ in keys],
        "scheduled_fors": [at for _, at in keys],
        "refuse_overshoot": True,
        "executor_ids": ["ex"] * len(keys),
        "instances": ["i"] * len(keys),
        "lease_s": 30.0,
        "ahead_s": 86_400.0,
        "waited": [""] * len(keys),
        **span([at for _, at in keys]),
    }


async def test_a_spike_s_claims_probe_each_job_s_runs_in_flight_not_the_day_s(
    store: Store, database_dsn: str
) -> None:
    owner = await store.tenants.create("spike", max_in_flight=1_000_000)
    # A spike registered ahead: every run at one instant of tomorrow, analysed pending.
    at = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    await store.time_partitions.ensure({at.date()})
    await store.occurrences.set_epochs(
        {PartitionId(p): 7 for p in range(PARTITIONS)}, node_id="node-a"
    )
    with psycopg.connect(database_dsn, autocommit=True) as conn:
        conn.execute(_JOBS, {"tenant": owner.id, "jobs": JOBS})
        conn.execute(_RUNS, {"tenant": owner.id, "at": at})
        conn.execute("ANALYZE")
        keys = conn.execute(
            "SELECT job_id, scheduled_for FROM executions ORDER BY job_id"
        ).fetchall()
        first, second = keys[:BATCH], keys[BATCH:]
        # The first half in flight; then the second half's claim, each key of a job
        # limited to one run at a time (nothing of its own in flight: all claimed).
        rows = conn.execute(sql("claim"), claim(first), binary=True).fetchall()
        assert sum(1 for r in rows if r[0] == "claimed") == BATCH
        before = tuples_read(conn)
        rows = conn.execute(sql("claim"), claim(second), binary=True).fetchall()
        assert sum(1 for r in rows if r[0] == "claimed") == BATCH
        read = tuples_read(conn) - before
        # The key's probe, the update's, the job's in-flight probe: a few per key,
        # however many of the day's runs are in flight.
        assert read <= 5 * BATCH, f"{read} index tuples read claiming {BATCH} keys"

        # The queue's skip and the in-flight lookup probe by job the same way.
        before = tuples_read(conn)
        conn.execute(
            sql("skip_queued"),
            {"job_ids": [job for job, _ in first], "scheduled_fors": [at] * BATCH,
             "queued": [at] * BATCH, **span([at])},
        )  # fmt: skip
        conn.execute(
            sql("in_flight_of_jobs"), {"job_ids": [job for job, _ in first], "tenant_id": owner.id}
        )
        read = tuples_read(conn) - before
        assert read <= 5 * BATCH, f"{read} index tuples read probing {BATCH} jobs twice"

        # The reaper: each partition's leases by expiry (none expired yet, all tomorrow).
        before = tuples_read(conn)
        rows = conn.execute(
            sql("reap"),
            {"partitions": list(range(PARTITIONS)), "epochs": [7] * PARTITIONS,
             "spare_job_ids": [], "spare_scheduled_fors": [], "spare_fences": [],
             "limit": BATCH},
        ).fetchall()  # fmt: skip
        assert rows == []
        read = tuples_read(conn) - before
        assert read <= PARTITIONS, f"{read} index tuples read by a reaper pass, nothing expired"
