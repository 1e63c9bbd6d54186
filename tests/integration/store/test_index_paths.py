"""The paths that must stay cheap are served by an index in the query's own order.

With sequential scans disabled, each hot or listing query must use the index
made for it and need no Sort: the index exists and matches the ORDER BY.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import psycopg
import pytest
from psycopg.rows import dict_row

from wheel.store.queries import sql

EPOCH_START = datetime(2026, 1, 1, tzinfo=UTC)
FAR = datetime(9999, 1, 1, tzinfo=UTC)
NIL = uuid.UUID(int=0)
MAX = uuid.UUID(int=(1 << 128) - 1)

PARAMS = {
    "partitions": [1, 2],
    "epochs": [1, 1],
    "before": FAR,
    "after_fire_at": EPOCH_START,
    "after_job_id": NIL,
    "after_scheduled_for": EPOCH_START,
    "limit": 100,
    "tenant_id": uuid.uuid4(),
    "job_id": uuid.uuid4(),
    "statuses": None,
    "scheduled_after": EPOCH_START,
    "scheduled_before": FAR,
    "created_after": None,
    "spare_job_ids": [uuid.uuid4()],
    "spare_scheduled_fors": [EPOCH_START],
    "spare_fences": [1],
}


def plan(dsn: str, query: str, params: dict[str, object]) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS executions_20260101 PARTITION OF executions"
            " FOR VALUES FROM ('2026-01-01') TO ('2026-01-02')"
        )
        conn.execute("SET enable_seqscan = off")
        rows = conn.cursor(row_factory=dict_row).execute("EXPLAIN " + query, params).fetchall()
    return "\n".join(row["QUERY PLAN"] for row in rows)


def function_body(dsn: str, name: str, arguments: dict[str, str]) -> str:
    """A SQL function's statement with its arguments as query parameters (to EXPLAIN it)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", (name,)).fetchone()
    assert row is not None
    body = str(row[0])
    for argument in sorted(arguments, key=len, reverse=True):
        body = body.replace(argument, arguments[argument])
    return body


def test_the_due_load_walks_the_due_index_in_order(database_dsn: str) -> None:
    body = function_body(database_dsn, "wheel_load_due", {
        "p_partitions": "%(partitions)s::integer[]", "p_before": "%(before)s",
        "p_after_fire_at": "%(after_fire_at)s", "p_after_job_id": "%(after_job_id)s::uuid",
        "p_after_scheduled_for": "%(after_scheduled_for)s", "p_limit": "%(limit)s",
        "p_created_after": "%(created_after)s::timestamptz",
    })  # fmt: skip
    text = plan(database_dsn, body, PARAMS)
    assert "executions_20260101_partition_fire_at_idx" in text, text
    assert "jobs_pkey" in text, text


@pytest.mark.parametrize(
    ("query", "index"),
    [
        ("list_executions_of_tenant", "executions_20260101_tenant_id_scheduled_for_job_id_idx"),
        ("list_executions_of_job", "executions_20260101_pkey"),
    ],
)
def test_paths_use_their_index_in_order(database_dsn: str, query: str, index: str) -> None:
    text = plan(database_dsn, sql(query), PARAMS)
    assert index in text, text
    assert "Sort" not in text, text


def test_the_catch_up_reads_only_what_became_pending_since_its_last_pass(
    database_dsn: str,
) -> None:
    params = {**PARAMS, "since": EPOCH_START, "after_since": EPOCH_START}
    text = plan(database_dsn, sql("load_requeued"), params)
    assert "executions_20260101_pending_since_idx" in text, text
    assert "partition_fire_at_idx" not in text, "never the whole due backlog"


def test_the_reaper_finds_expired_leases_by_index(database_dsn: str) -> None:
    reap = sql("reap")
    expired = reap[reap.index("SELECT e.job_id") : reap.index("LIMIT")]
    text = plan(database_dsn, expired.replace(
        "ARRAY(SELECT partition FROM owned)", "%(partitions)s::integer[]"
    ), PARAMS)  # fmt: skip
    assert "executions_20260101_partition_lease_until_idx" in text, text
