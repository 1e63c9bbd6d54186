-- See wheel_record_attempts in the schema; the recorded runs' tenants' in-flight
-- counts are lowered in the same statement, last.
WITH recorded AS MATERIALIZED (
    SELECT accepted, job_id, scheduled_for, fence, current_fence, status::text AS status,
           fire_at, attempt, refusal, tenant_id
    FROM wheel_record_attempts(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[],
                               %(fences)s::bigint[], %(outcomes)s::wheel_outcome[],
                               %(executors)s::text[], %(instances)s::text[],
                               %(started)s::timestamptz[], %(finished)s::timestamptz[],
                               %(errors)s::text[])
), counted AS (
    SELECT wheel_count_in_flight(array_agg(g.tenant_id ORDER BY g.tenant_id),
                                 array_agg(-g.n ORDER BY g.tenant_id), false) AS over
    FROM (SELECT r.tenant_id, count(*)::integer AS n FROM recorded r
          WHERE r.accepted GROUP BY r.tenant_id) g
)
SELECT r.accepted, r.job_id, r.scheduled_for, r.fence, r.current_fence, r.status, r.fire_at,
       r.attempt, r.refusal
FROM counted CROSS JOIN recorded r
