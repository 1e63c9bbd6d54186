-- For each job, its latest execution scheduled by %(now)s that is not pending (it ran,
-- runs, or was skipped): the primary key scanned backwards, one row per job at most.
SELECT j.id AS job_id, e.scheduled_for, e.status::text AS status, e.finished_at
FROM unnest(%(job_ids)s::uuid[]) AS j (id)
CROSS JOIN LATERAL (
    SELECT x.scheduled_for, x.status, x.finished_at
    FROM executions x
    WHERE x.job_id = j.id AND x.scheduled_for <= %(now)s AND x.status <> 'pending'
    ORDER BY x.scheduled_for DESC
    LIMIT 1
) AS e
