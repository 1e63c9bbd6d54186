-- A tenant's executions, oldest (soonest) first, in some statuses (NULL: any), within
-- [scheduled_after, scheduled_before), after a keyset cursor. Served by
-- executions_tenant_newest (scanned backwards): a range scan, never a scan of time.
SELECT e.*
FROM executions e
WHERE e.tenant_id = %(tenant_id)s
  AND (%(statuses)s::text[] IS NULL OR e.status::text = ANY(%(statuses)s::text[]))
  AND e.scheduled_for >= %(scheduled_after)s
  AND e.scheduled_for < %(scheduled_before)s
  AND (e.scheduled_for, e.job_id) > (%(after_scheduled_for)s, %(after_job_id)s::uuid)
ORDER BY e.scheduled_for, e.job_id
LIMIT %(limit)s
