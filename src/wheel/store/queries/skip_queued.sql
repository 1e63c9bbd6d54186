-- Overlap 'queue': record pending runs skipped because another run of their job is
-- already queued (`queued`, the node's) behind one in flight, read here: a run whose
-- job has nothing in flight now is left pending. The reason names both runs. The
-- in-flight probe is by job (the leased runs' index), never by instant.
WITH input AS (
    SELECT *
    FROM unnest(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[],
                %(queued)s::timestamptz[]) AS k (job_id, scheduled_for, queued)
), busy AS (
    SELECT k.job_id, k.scheduled_for, k.queued, b.scheduled_for AS busy_at
    FROM input k
    CROSS JOIN LATERAL (
        SELECT o.scheduled_for
        FROM executions o
        WHERE o.job_id = k.job_id AND o.status IN ('dispatched', 'running')
        ORDER BY o.dispatched_at
        LIMIT 1
    ) b
)
UPDATE executions e
SET status = 'skipped',
    reason = 'overlap: run ' || wheel_execution_id(b.job_id, b.queued)
             || ' was already queued behind run ' || wheel_execution_id(b.job_id, b.busy_at)
             || ', in flight (policy queue)',
    finished_at = clock_timestamp()
FROM busy b
WHERE e.job_id = b.job_id AND e.scheduled_for = b.scheduled_for
  AND e.scheduled_for BETWEEN %(first)s AND %(last)s
  AND e.status = 'pending'
RETURNING e.job_id, e.scheduled_for
