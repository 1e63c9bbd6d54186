-- The catch-up's page: pending occurrences of active jobs in some partitions that
-- became pending at or after an instant (made, retried or given back since the
-- last pass) and fire before another, by the partial index on pending_since (a
-- short, recent range), after a keyset cursor; routing as in wheel_load_due.
SELECT e.job_id, e.scheduled_for, e.partition, e.fire_at, e.priority, e.job_version,
       e.tenant_id, j.pool, j.task_type,
       wheel_run_overlap(e.trigger, e.attempt, j.overlap, j.schedule_kind),
       e.pending_since
FROM executions e
CROSS JOIN LATERAL (
    SELECT j.pool, j.task_type, j.overlap, j.schedule_kind
    FROM jobs j
    WHERE j.id = e.job_id AND j.status = 'active'
    LIMIT 1
) j
WHERE e.partition = ANY(%(partitions)s::integer[])
  AND e.status = 'pending'
  AND e.pending_since >= %(since)s
  AND e.fire_at < %(before)s
  AND (e.pending_since, e.job_id, e.scheduled_for)
      > (%(after_since)s, %(after_job_id)s::uuid, %(after_scheduled_for)s)
ORDER BY e.pending_since, e.job_id, e.scheduled_for
LIMIT %(limit)s
