-- For each of a tenant's concurrency keys, its runs dispatched or running now: how many,
-- and the first `named` handed over (the keyed runs' partial index, one probe a key):
-- what a run held back at its key's limit waits for.
SELECT k.key, h.n, h.job_ids[1:%(named)s], h.instants[1:%(named)s]
FROM unnest(%(keys)s::text[]) AS k (key)
CROSS JOIN LATERAL (
    SELECT count(*)::integer AS n,
           array_agg(e.job_id ORDER BY e.dispatched_at, e.job_id) AS job_ids,
           array_agg(e.scheduled_for ORDER BY e.dispatched_at, e.job_id) AS instants
    FROM executions e
    WHERE e.tenant_id = %(tenant_id)s AND e.concurrency_key = k.key
      AND e.status IN ('dispatched', 'running')
) h
