-- Extend the leases of running executions whose fence still matches; the
-- first heartbeat marks the handler as started. Returns the keys extended.
UPDATE executions e
SET lease_until = clock_timestamp() + make_interval(secs => %(lease_s)s),
    status = 'running',
    started_at = coalesce(e.started_at, clock_timestamp()),
    executor_id = %(executor_id)s
FROM unnest(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[], %(fences)s::bigint[])
     AS h (job_id, scheduled_for, fence)
WHERE e.job_id = h.job_id AND e.scheduled_for = h.scheduled_for
  AND e.fence = h.fence AND e.status IN ('dispatched', 'running')
RETURNING e.job_id, e.scheduled_for, e.fence
