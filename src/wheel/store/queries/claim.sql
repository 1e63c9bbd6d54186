-- See wheel_claim in the schema: epoch-fenced, skip-locked, tenant-capped; each
-- claimed run is bound to the executor (id and instance) it is handed to.
SELECT state, job_id, scheduled_for, tenant_id, partition, fence, attempt, lease_until,
       job_version, task_type, payload, pool, priority, timeout_ms, fire_at
FROM wheel_claim(%(partitions)s::integer[], %(epochs)s::bigint[], %(job_ids)s::uuid[],
                 %(scheduled_fors)s::timestamptz[], %(executor_ids)s::text[],
                 %(instances)s::text[], %(lease_s)s::float8, %(ahead_s)s::float8)
