-- Pending occurrences of the given partitions firing before %(before)s, in
-- firing order, after a keyset cursor (fire_at, job_id, scheduled_for).
SELECT job_id, scheduled_for, partition, fire_at, priority, job_version
FROM executions
WHERE partition = ANY(%(partitions)s::integer[])
  AND status = 'pending'
  AND fire_at < %(before)s
  AND (fire_at, job_id, scheduled_for) > (%(after_fire_at)s, %(after_job_id)s::uuid,
                                          %(after_scheduled_for)s)
ORDER BY fire_at, job_id, scheduled_for
LIMIT %(limit)s
