-- See wheel_load_due in the schema: a keyset page of due occurrences with routing.
SELECT job_id, scheduled_for, partition, fire_at, priority, job_version, tenant_id, pool,
       task_type, overlap
FROM wheel_load_due(%(partitions)s::integer[], %(before)s, %(after_fire_at)s,
                    %(after_job_id)s::uuid, %(after_scheduled_for)s, %(limit)s::integer,
                    %(created_after)s::timestamptz)
