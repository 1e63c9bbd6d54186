-- After a calendar's edit: a run it skipped that now runs (its day opened, or it now
-- moves to an open day) becomes pending again at its instant; one still skipped takes
-- the new reason. Both move to the job's new version. One day's keys a statement.
UPDATE executions e
SET job_version = u.version,
    status = CASE WHEN u.runs THEN 'pending' ELSE e.status END,
    reason = CASE WHEN u.runs THEN NULL ELSE u.reason END,
    finished_at = CASE WHEN u.runs THEN NULL ELSE e.finished_at END,
    fire_at = CASE WHEN u.runs THEN u.fire_at ELSE e.fire_at END,
    pending_since = CASE WHEN u.runs THEN now() ELSE e.pending_since END,
    priority = u.priority
FROM unnest(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[], %(versions)s::bigint[],
            %(runs)s::boolean[], %(fire_ats)s::timestamptz[], %(priorities)s::integer[],
            %(reasons)s::text[])
     AS u (job_id, scheduled_for, version, runs, fire_at, priority, reason)
WHERE e.job_id = u.job_id AND e.scheduled_for = u.scheduled_for
  AND e.scheduled_for BETWEEN %(first)s AND %(last)s
  AND e.status = 'skipped'
  AND e.job_version < u.version  -- a slower materialiser never undoes a newer re-plan
