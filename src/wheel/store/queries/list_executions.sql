-- A tenant's executions, newest first, optionally of one job, in some
-- statuses, within [scheduled_after, scheduled_before), after a keyset cursor.
-- Served by executions_tenant_newest (or the primary key for one job).
SELECT e.*, j.name AS job_name
FROM executions e
JOIN jobs j ON j.id = e.job_id
WHERE e.tenant_id = %(tenant_id)s
  AND (%(job_id)s::uuid IS NULL OR e.job_id = %(job_id)s::uuid)
  AND (%(statuses)s::text[] IS NULL OR e.status::text = ANY(%(statuses)s::text[]))
  AND e.scheduled_for >= %(scheduled_after)s
  AND e.scheduled_for < %(scheduled_before)s
  AND (e.scheduled_for, e.job_id) < (%(after_scheduled_for)s, %(after_job_id)s::uuid)
ORDER BY e.scheduled_for DESC, e.job_id DESC
LIMIT %(limit)s
