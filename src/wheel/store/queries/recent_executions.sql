-- A tenant's newest executions, scheduled from %(since)s to %(upcoming_s)s seconds ahead
-- (the executions_tenant_newest index, a range scan): what `wheel dev`'s view shows.
SELECT j.name, e.job_id, e.scheduled_for, e.fire_at, e.status::text, e.attempt,
       j.max_attempts, e.executor_id, e.started_at, coalesce(e.error, e.reason),
       e.finished_at, j.status, e.trigger,
       j.paused_by, j.pause_note, j.paused_at
FROM executions e
JOIN jobs j ON j.id = e.job_id
WHERE e.tenant_id = %(tenant)s
  AND e.scheduled_for >= %(since)s
  AND e.scheduled_for < now() + make_interval(secs => %(upcoming_s)s)
ORDER BY e.scheduled_for DESC, e.job_id DESC
LIMIT %(limit)s
