-- A run of the job that is dispatched or running now (by the partial index of
-- leased runs per job), if any: what a run of an overlap-limited job waits for.
SELECT e.*
FROM executions e
WHERE e.job_id = %(job_id)s AND e.tenant_id = %(tenant_id)s
  AND e.status IN ('dispatched', 'running')
LIMIT 1
