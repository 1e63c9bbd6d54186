SELECT number, fence, executor_id, started_at, finished_at, outcome, error
FROM attempts
WHERE job_id = %(job_id)s AND scheduled_for = %(scheduled_for)s
ORDER BY fence
