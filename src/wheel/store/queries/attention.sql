-- For each of a tenant's jobs (those in %(job_ids)s, or all its jobs when that is NULL),
-- its runs that may need a person: pending runs due by %(now)s and not started (the
-- executions_due index of the jobs' partitions: normally few, they are being claimed),
-- those of them due before %(overdue_before)s, and its latest runs that ended dead or
-- need review after its latest success (the primary key scanned backwards, at most
-- %(recent)s settled runs a job), and for jobs with a deadline, how many of their latest
-- %(recent)s runs due by %(now)s missed it. Jobs with nothing to count are left out.
WITH listed AS (
    SELECT j.id, j.partition, j.deadline_ms
    FROM jobs j
    WHERE j.tenant_id = %(tenant_id)s
      AND j.status <> 'deleted'
      AND (%(job_ids)s::uuid[] IS NULL OR j.id = ANY(%(job_ids)s::uuid[]))
),
due AS (
    SELECT e.job_id,
           count(*) AS due,
           count(*) FILTER (WHERE e.fire_at < %(overdue_before)s) AS overdue
    FROM executions e
    WHERE e.status = 'pending'
      AND e.partition = ANY(ARRAY(SELECT DISTINCT l.partition FROM listed l))
      AND e.fire_at <= %(now)s
      AND e.job_id IN (SELECT l.id FROM listed l)
    GROUP BY e.job_id
),
failing AS (
    SELECT l.id AS job_id, f.failing
    FROM listed l
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (
                   WHERE r.status IN ('dead', 'needs_review')
                     AND r.scheduled_for > coalesce(r.last_ok, '-infinity'::timestamptz)
               ) AS failing
        FROM (
            SELECT t.status, t.scheduled_for,
                   max(t.scheduled_for) FILTER (WHERE t.status = 'succeeded') OVER () AS last_ok
            FROM (
                SELECT x.status, x.scheduled_for
                FROM executions x
                WHERE x.job_id = l.id
                  AND x.scheduled_for <= %(now)s
                  AND x.status IN ('succeeded', 'dead', 'needs_review')
                ORDER BY x.scheduled_for DESC
                LIMIT %(recent)s
            ) AS t
        ) AS r
    ) AS f
    WHERE f.failing > 0
),
missed AS (
    SELECT l.id AS job_id, m.missed
    FROM listed l
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE t.deadline_missed_at IS NOT NULL) AS missed
        FROM (
            SELECT x.deadline_missed_at
            FROM executions x
            WHERE x.job_id = l.id
              AND x.scheduled_for <= %(now)s
            ORDER BY x.scheduled_for DESC
            LIMIT %(recent)s
        ) AS t
    ) AS m
    WHERE l.deadline_ms IS NOT NULL AND m.missed > 0
)
SELECT coalesce(d.job_id, f.job_id, m.job_id) AS job_id,
       coalesce(d.due, 0) AS due,
       coalesce(d.overdue, 0) AS overdue,
       coalesce(f.failing, 0) AS failing,
       coalesce(m.missed, 0) AS deadline_missed
FROM due d
FULL JOIN failing f ON f.job_id = d.job_id
FULL JOIN missed m ON m.job_id = coalesce(d.job_id, f.job_id)
