-- Scheduled pending occurrences made from a version older than the job's current one
-- (manual and backfill runs are not the schedule's to supersede).
SELECT e.job_id, e.scheduled_for
FROM unnest(%(job_ids)s::uuid[], %(versions)s::bigint[]) AS u (job_id, version)
JOIN LATERAL (
    SELECT e.job_id, e.scheduled_for
    FROM executions e
    WHERE e.job_id = u.job_id AND e.status = 'pending' AND e.job_version < u.version
      AND e.trigger = 'schedule'
) e ON true
