-- A claim redone after it overshot a cap (or a concurrency key's limit: a key's count
-- moves only under its tenant's lock): the tenants' rows locked first, in id
-- order, so its room is what was last committed and nobody moves it meanwhile.
-- Without tenant ids, the keys' tenants are looked up.
SELECT t.id
FROM tenants t
WHERE t.id = ANY(coalesce(%(tenant_ids)s::uuid[], ARRAY(
    SELECT DISTINCT e.tenant_id
    FROM unnest(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[]) AS w (job_id, scheduled_for)
    JOIN executions e
      ON e.job_id = w.job_id AND e.scheduled_for = w.scheduled_for
     AND e.scheduled_for BETWEEN %(first)s AND %(last)s)))
ORDER BY t.id
FOR UPDATE OF t
