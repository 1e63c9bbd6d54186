-- One job's executions, oldest (soonest) first: the primary key (job_id, scheduled_for)
-- scanned forwards. Ownership is checked once on the job (an InitPlan), not
-- per row, so the tenant index is no candidate for this path.
SELECT e.*
FROM executions e
WHERE e.job_id = %(job_id)s
  AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = %(job_id)s AND j.tenant_id = %(tenant_id)s)
  AND (%(statuses)s::text[] IS NULL OR e.status::text = ANY(%(statuses)s::text[]))
  AND e.scheduled_for >= %(scheduled_after)s
  AND e.scheduled_for < %(scheduled_before)s
  AND (e.scheduled_for, e.job_id) > (%(after_scheduled_for)s, %(after_job_id)s::uuid)
ORDER BY e.scheduled_for, e.job_id
LIMIT %(limit)s
