-- After an edit: pending occurrences the new version still has are carried
-- over to it; the others are skipped as superseded, never run under the old
-- definition.
UPDATE executions e
SET job_version = u.version,
    -- A retry keeps its backoff instant; a fresh run moves to the new smear.
    fire_at = CASE WHEN u.keep AND e.attempt = 0 THEN u.fire_at ELSE e.fire_at END,
    priority = u.priority,
    status = CASE WHEN u.keep THEN e.status ELSE 'skipped' END,
    -- A business calendar's skip says so (wheel.schedule.business_days).
    reason = CASE WHEN u.keep THEN e.reason ELSE coalesce(u.reason, 'superseded') END,
    finished_at = CASE WHEN u.keep THEN e.finished_at ELSE now() END,
    -- A kept scheduled run has the new version's deadline, unless it missed one already.
    deadline_at = CASE WHEN u.keep AND e.trigger = 'schedule' AND e.deadline_missed_at IS NULL
                       THEN e.scheduled_for + make_interval(secs => u.deadline_ms / 1000.0)
                       ELSE e.deadline_at END
FROM unnest(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[], %(versions)s::bigint[],
            %(keep)s::boolean[], %(fire_ats)s::timestamptz[], %(priorities)s::integer[],
            %(deadline_ms)s::bigint[], %(reasons)s::text[])
     AS u (job_id, scheduled_for, version, keep, fire_at, priority, deadline_ms, reason)
WHERE e.job_id = u.job_id AND e.scheduled_for = u.scheduled_for
  AND e.scheduled_for BETWEEN %(first)s AND %(last)s
  AND e.status = 'pending'
  AND e.job_version < u.version  -- a slower materialiser never undoes a newer carry
