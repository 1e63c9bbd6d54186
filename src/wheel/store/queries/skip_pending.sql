-- Record pending occurrences skipped, with the reason (e.g. an overlap policy).
UPDATE executions e
SET status = 'skipped', reason = %(reason)s, finished_at = clock_timestamp()
FROM unnest(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[]) AS k (job_id, scheduled_for)
WHERE e.job_id = k.job_id AND e.scheduled_for = k.scheduled_for
  AND e.scheduled_for BETWEEN %(first)s AND %(last)s
  AND e.status = 'pending'
RETURNING e.job_id, e.scheduled_for
