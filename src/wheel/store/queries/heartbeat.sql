-- Extend the leases of running executions whose fence still matches and that
-- were dispatched to this executor process (id and instance); the first
-- heartbeat marks the handler as started. Returns the ones extended.
-- One primary-key probe per item (LATERAL ... LIMIT 1, by key only: the fence
-- and status are checked outside, so no partial index with stale statistics
-- can look cheaper), in the caller's (key) order, like results.
WITH extended AS (
    SELECT e.job_id, e.scheduled_for, e.fence
    FROM unnest(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[], %(fences)s::bigint[])
         AS h (job_id, scheduled_for, fence)
    CROSS JOIN LATERAL (
        SELECT e.job_id, e.scheduled_for, e.fence, e.status, e.executor_id, e.executor_instance
        FROM executions e
        WHERE e.job_id = h.job_id AND e.scheduled_for = h.scheduled_for
          AND e.scheduled_for BETWEEN %(first)s AND %(last)s
        LIMIT 1
        FOR UPDATE OF e
    ) e
    WHERE e.fence = h.fence AND e.status IN ('dispatched', 'running')
      AND e.executor_id = %(executor_id)s AND e.executor_instance = %(instance)s
)
UPDATE executions e
SET lease_until = clock_timestamp() + make_interval(secs => %(lease_s)s),
    status = 'running',
    started_at = coalesce(e.started_at, clock_timestamp())
FROM extended x
WHERE e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for
  AND e.scheduled_for BETWEEN %(first)s AND %(last)s
RETURNING e.job_id, e.scheduled_for, e.fence
