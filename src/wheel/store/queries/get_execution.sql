SELECT e.*
FROM executions e
WHERE e.job_id = %(job_id)s AND e.scheduled_for = %(scheduled_for)s
  AND e.tenant_id = %(tenant_id)s
