INSERT INTO jobs (id, tenant_id, name, task_type, payload, schedule_kind, run_at, cron, time_zone,
                  starts_at, ends_at, smear_ms, dst_gap, dst_fold, max_attempts, backoff_base_ms,
                  backoff_cap_ms, idempotent, misfire, misfire_grace_ms, misfire_replay_cap,
                  overlap, timeout_ms, priority, pool, notify_url, http_url,
                  http_retry_client_errors, partition, every_ms, anchor, interval_dst,
                  deadline_ms, notify_after_failures, concurrency_key, concurrency_key_field,
                  concurrency_limit, calendars,
                  calendar_policy)
VALUES (%(id)s, %(tenant_id)s, %(name)s, %(task_type)s, %(payload)s, %(schedule_kind)s,
        %(run_at)s, %(cron)s, %(time_zone)s, %(starts_at)s, %(ends_at)s, %(smear_ms)s,
        %(dst_gap)s, %(dst_fold)s, %(max_attempts)s, %(backoff_base_ms)s, %(backoff_cap_ms)s,
        %(idempotent)s, %(misfire)s, %(misfire_grace_ms)s, %(misfire_replay_cap)s, %(overlap)s,
        %(timeout_ms)s, %(priority)s, %(pool)s, %(notify_url)s, %(http_url)s,
        %(http_retry_client_errors)s, %(partition)s, %(every_ms)s, %(anchor)s,
        %(interval_dst)s, %(deadline_ms)s, %(notify_after_failures)s, %(concurrency_key)s,
        %(concurrency_key_field)s, %(concurrency_limit)s,
        %(calendars)s, %(calendar_policy)s)
RETURNING *
