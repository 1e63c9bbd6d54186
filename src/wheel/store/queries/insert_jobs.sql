-- Many jobs of one tenant in one statement, a column per array. A job whose id or name
-- exists is left as it is and not returned: the caller reads it and decides
-- (the same definition: a repeated create; another: a conflict). Only what the
-- database decides comes back: the caller has the definitions.
INSERT INTO jobs (id, tenant_id, name, task_type, payload, schedule_kind, run_at, cron, time_zone,
                  starts_at, ends_at, smear_ms, dst_gap, dst_fold, max_attempts, backoff_base_ms,
                  backoff_cap_ms, idempotent, misfire, misfire_grace_ms, misfire_replay_cap,
                  overlap, timeout_ms, priority, pool, notify_url, http_url,
                  http_retry_client_errors, partition, every_ms, anchor, interval_dst,
                  deadline_ms, notify_after_failures, concurrency_key, concurrency_key_field,
                  concurrency_limit, calendars,
                  calendar_policy)
SELECT j.id, %(tenant_id)s::uuid, j.name, j.task_type, j.payload, j.schedule_kind, j.run_at,
       j.cron, j.time_zone, j.starts_at, j.ends_at, j.smear_ms, j.dst_gap, j.dst_fold,
       j.max_attempts, j.backoff_base_ms, j.backoff_cap_ms, j.idempotent, j.misfire,
       j.misfire_grace_ms, j.misfire_replay_cap, j.overlap, j.timeout_ms, j.priority, j.pool,
       j.notify_url, j.http_url, j.http_retry_client_errors, j.partition, j.every_ms, j.anchor,
       j.interval_dst, j.deadline_ms, j.notify_after_failures, j.concurrency_key,
       j.concurrency_key_field, j.concurrency_limit,
       ARRAY(SELECT jsonb_array_elements_text(j.calendars)), j.calendar_policy
FROM unnest(%(id)s::uuid[], %(name)s::text[], %(task_type)s::text[], %(payload)s::bytea[],
            %(schedule_kind)s::text[], %(run_at)s::timestamptz[], %(cron)s::text[],
            %(time_zone)s::text[], %(starts_at)s::timestamptz[], %(ends_at)s::timestamptz[],
            %(smear_ms)s::bigint[], %(dst_gap)s::text[], %(dst_fold)s::text[],
            %(max_attempts)s::integer[], %(backoff_base_ms)s::bigint[],
            %(backoff_cap_ms)s::bigint[], %(idempotent)s::boolean[], %(misfire)s::text[],
            %(misfire_grace_ms)s::bigint[], %(misfire_replay_cap)s::integer[],
            %(overlap)s::text[], %(timeout_ms)s::bigint[], %(priority)s::integer[],
            %(pool)s::text[], %(notify_url)s::text[], %(http_url)s::text[],
            %(http_retry_client_errors)s::boolean[], %(partition)s::integer[],
            %(every_ms)s::bigint[], %(anchor)s::timestamptz[], %(interval_dst)s::text[],
            %(deadline_ms)s::bigint[], %(notify_after_failures)s::integer[],
            %(concurrency_key)s::text[], %(concurrency_key_field)s::text[],
            %(concurrency_limit)s::integer[],
            %(calendars)s::jsonb[], %(calendar_policy)s::text[])
     AS j (id, name, task_type, payload, schedule_kind, run_at, cron, time_zone, starts_at,
           ends_at, smear_ms, dst_gap, dst_fold, max_attempts, backoff_base_ms, backoff_cap_ms,
           idempotent, misfire, misfire_grace_ms, misfire_replay_cap, overlap, timeout_ms,
           priority, pool, notify_url, http_url, http_retry_client_errors, partition, every_ms,
           anchor, interval_dst, deadline_ms, notify_after_failures, concurrency_key,
           concurrency_key_field, concurrency_limit, calendars, calendar_policy)
ON CONFLICT DO NOTHING
RETURNING id, tenant_id, partition, status, version, materialised_to, materialised_version,
          created_at, updated_at
