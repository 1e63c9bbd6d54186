-- Insert occurrences; one that already exists (same job and instant) is left
-- as it is. An occurrence of a job deleted meanwhile is recorded cancelled,
-- never pending (nothing would ever claim it). A scheduled run of a job with a
-- deadline carries its deadline's instant (NULL otherwise: see executions_deadlines).
-- Returns the keys inserted.
INSERT INTO executions (job_id, scheduled_for, tenant_id, partition, job_version, fire_at,
                        priority, trigger, status, reason, finished_at, deadline_at,
                        concurrency_key)
SELECT o.job_id, o.scheduled_for, o.tenant_id, o.partition, o.job_version, o.fire_at,
       o.priority, o.trigger,
       (CASE WHEN j.status = 'deleted' THEN 'cancelled' ELSE o.status END)::wheel_execution_status,
       CASE WHEN j.status = 'deleted' THEN 'job deleted' ELSE o.reason END,
       CASE WHEN o.status = 'pending' AND j.status <> 'deleted' THEN NULL ELSE now() END,
       CASE WHEN o.trigger = 'schedule' AND j.deadline_ms IS NOT NULL
            THEN o.scheduled_for + make_interval(secs => j.deadline_ms / 1000.0) END,
       -- Its job's concurrency key now (runs are given the job's payload: the key is
       -- read from it); NULL without one, and nothing more is read.
       CASE WHEN j.concurrency_limit > 0
            THEN wheel_concurrency_key(j.concurrency_key, j.concurrency_key_field,
                                       j.concurrency_limit, j.payload) END
FROM unnest(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[], %(tenant_ids)s::uuid[],
            %(partitions)s::integer[], %(job_versions)s::bigint[], %(fire_ats)s::timestamptz[],
            %(priorities)s::integer[], %(triggers)s::text[], %(statuses)s::text[],
            %(reasons)s::text[])
     AS o (job_id, scheduled_for, tenant_id, partition, job_version, fire_at, priority, trigger,
           status, reason)
-- LATERAL ... LIMIT 1: one primary-key probe per row. A join let the planner hash the
-- whole jobs table for every batch: a cost that grew with the table, not the batch.
CROSS JOIN LATERAL (SELECT j.status, j.deadline_ms, j.concurrency_key,
                           j.concurrency_key_field, j.concurrency_limit, j.payload
                    FROM jobs j WHERE j.id = o.job_id LIMIT 1) j
ON CONFLICT (job_id, scheduled_for) DO NOTHING
RETURNING job_id, scheduled_for
