-- For each of these jobs, a run dispatched or running now, if any (the partial index of
-- leased runs per job, one probe a job): what runs of overlap-limited jobs wait for.
SELECT e.*
FROM unnest(%(job_ids)s::uuid[]) AS j (id)
CROSS JOIN LATERAL (
    SELECT x.*
    FROM executions x
    WHERE x.job_id = j.id AND x.tenant_id = %(tenant_id)s
      AND x.status IN ('dispatched', 'running')
    LIMIT 1
) AS e
