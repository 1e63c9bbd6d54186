SELECT e.*, j.name AS job_name
FROM executions e
JOIN jobs j ON j.id = e.job_id
WHERE e.job_id = %(job_id)s AND e.scheduled_for = %(scheduled_for)s
  AND e.tenant_id = %(tenant_id)s
