-- Scheduled runs still to come that a business calendar skipped, made from a version
-- older than the job's current one: a calendar edit re-plans them (wheel.schedule.
-- business_days). The primary key's range from now on, per job.
SELECT e.job_id, e.scheduled_for
FROM unnest(%(job_ids)s::uuid[], %(versions)s::bigint[]) AS u (job_id, version)
JOIN LATERAL (
    SELECT e.job_id, e.scheduled_for
    FROM executions e
    WHERE e.job_id = u.job_id AND e.scheduled_for > %(now)s
      AND e.status = 'skipped' AND e.reason LIKE 'calendar %%' AND e.job_version < u.version
      AND e.trigger = 'schedule'
) e ON true
