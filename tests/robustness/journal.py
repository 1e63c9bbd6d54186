"""The store's side of the history: every change of a run's status, fence or firing
instant, with the instant its transaction committed.

Observation only, in the test's own database: a trigger on `executions` writes each
change to a table of the test's, and Postgres keeps commit timestamps
(`track_commit_timestamp`, set before the cluster starts). A commit's instant is when
other transactions could first see the change, which is what a skip's reason is about.
"""

from __future__ import annotations

import psycopg

from tests.services import CrashablePostgres

JOURNAL = """
CREATE TABLE robustness_journal (
    job_id uuid NOT NULL, scheduled_for timestamptz NOT NULL, status text NOT NULL,
    fence bigint NOT NULL, executor_id text, fire_at timestamptz NOT NULL, xid bigint NOT NULL
);
CREATE FUNCTION robustness_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO robustness_journal VALUES (NEW.job_id, NEW.scheduled_for, NEW.status::text,
                                           NEW.fence, NEW.executor_id, NEW.fire_at,
                                           txid_current());
    RETURN NULL;
END $$;
CREATE TRIGGER robustness_made AFTER INSERT ON executions
    FOR EACH ROW EXECUTE FUNCTION robustness_note();
CREATE TRIGGER robustness_changed AFTER UPDATE ON executions FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.fence IS DISTINCT FROM NEW.fence
          OR OLD.fire_at IS DISTINCT FROM NEW.fire_at)
    EXECUTE FUNCTION robustness_note();
"""

READ = """
SELECT 'transition', j.job_id, j.scheduled_for, j.status, j.fence, j.executor_id, j.fire_at,
       pg_xact_commit_timestamp((j.xid %% 4294967296)::text::xid)
FROM robustness_journal j JOIN executions e USING (job_id, scheduled_for)
WHERE e.tenant_id = %s
ORDER BY 8
"""
FIELDS = ("kind", "job_id", "scheduled_for", "status", "fence", "executor", "fire_at", "committed")


async def keep_journal(postgres: CrashablePostgres) -> None:
    """Commit timestamps on (a restart applies it) and the journal's trigger in place."""
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET track_commit_timestamp = on")
    await postgres.crash()
    await postgres.restart()
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(JOURNAL)
