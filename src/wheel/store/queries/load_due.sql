-- Pending occurrences of active jobs in the given partitions firing before
-- %(before)s, in firing order, after a keyset cursor (fire_at, job_id,
-- scheduled_for), with what the node needs to route them before claiming:
-- tenant, pool, task type, overlap policy.
SELECT e.job_id, e.scheduled_for, e.partition, e.fire_at, e.priority, e.job_version,
       e.tenant_id, j.pool, j.task_type, j.overlap
FROM executions e
JOIN jobs j ON j.id = e.job_id
WHERE e.partition = ANY(%(partitions)s::integer[])
  AND e.status = 'pending'
  AND e.fire_at < %(before)s
  AND (e.fire_at, e.job_id, e.scheduled_for) > (%(after_fire_at)s, %(after_job_id)s::uuid,
                                                %(after_scheduled_for)s)
  AND j.status = 'active'
ORDER BY e.fire_at, e.job_id, e.scheduled_for
LIMIT %(limit)s
