-- Insert occurrences; one that already exists (same job and instant) is left
-- as it is. Returns the keys actually inserted.
INSERT INTO executions (job_id, scheduled_for, tenant_id, partition, job_version, fire_at,
                        priority, trigger, status, reason, finished_at)
SELECT job_id, scheduled_for, tenant_id, partition, job_version, fire_at, priority, trigger,
       status::wheel_execution_status, reason,
       CASE WHEN status = 'pending' THEN NULL ELSE now() END
FROM unnest(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[], %(tenant_ids)s::uuid[],
            %(partitions)s::integer[], %(job_versions)s::bigint[], %(fire_ats)s::timestamptz[],
            %(priorities)s::integer[], %(triggers)s::text[], %(statuses)s::text[],
            %(reasons)s::text[])
     AS o (job_id, scheduled_for, tenant_id, partition, job_version, fire_at, priority, trigger,
           status, reason)
ON CONFLICT (job_id, scheduled_for) DO NOTHING
RETURNING job_id, scheduled_for
