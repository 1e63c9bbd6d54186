-- One execution with every attempt, in one statement: one snapshot, so the status and
-- the attempts always agree (two statements could see a result recorded between them:
-- "dispatched" beside a succeeded attempt). Both tables are pruned to the run's day.
SELECT e.*,
       coalesce((SELECT json_agg(json_build_object(
                     'number', a.number, 'fence', a.fence, 'executor_id', a.executor_id,
                     'started_at', a.started_at, 'finished_at', a.finished_at,
                     'outcome', a.outcome, 'error', a.error) ORDER BY a.fence)
                 FROM attempts a
                 WHERE a.job_id = %(job_id)s AND a.scheduled_for = %(scheduled_for)s),
                '[]'::json) AS attempts_made
FROM executions e
WHERE e.job_id = %(job_id)s AND e.scheduled_for = %(scheduled_for)s
  AND e.tenant_id = %(tenant_id)s
