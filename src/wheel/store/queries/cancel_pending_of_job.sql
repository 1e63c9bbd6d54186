UPDATE executions
SET status = 'cancelled', reason = %(reason)s, finished_at = now()
WHERE job_id = %(job_id)s AND status = 'pending'
