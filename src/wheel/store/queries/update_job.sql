-- Replace a job's definition if it is still at the version the edit was based on. Its
-- pending runs take the concurrency key the new definition gives them (a run in flight
-- keeps the one it is counted under).
WITH updated AS (
UPDATE jobs
SET name = %(name)s, task_type = %(task_type)s, payload = %(payload)s,
    schedule_kind = %(schedule_kind)s, run_at = %(run_at)s, cron = %(cron)s,
    time_zone = %(time_zone)s, starts_at = %(starts_at)s, ends_at = %(ends_at)s,
    smear_ms = %(smear_ms)s, dst_gap = %(dst_gap)s, dst_fold = %(dst_fold)s,
    max_attempts = %(max_attempts)s, backoff_base_ms = %(backoff_base_ms)s,
    backoff_cap_ms = %(backoff_cap_ms)s, idempotent = %(idempotent)s, misfire = %(misfire)s,
    misfire_grace_ms = %(misfire_grace_ms)s, misfire_replay_cap = %(misfire_replay_cap)s,
    overlap = %(overlap)s, timeout_ms = %(timeout_ms)s, priority = %(priority)s,
    pool = %(pool)s, notify_url = %(notify_url)s, http_url = %(http_url)s,
    http_retry_client_errors = %(http_retry_client_errors)s,
    every_ms = %(every_ms)s, anchor = %(anchor)s, interval_dst = %(interval_dst)s,
    deadline_ms = %(deadline_ms)s, notify_after_failures = %(notify_after_failures)s,
    concurrency_key = %(concurrency_key)s, concurrency_key_field = %(concurrency_key_field)s,
    concurrency_limit = %(concurrency_limit)s,
    calendars = %(calendars)s, calendar_policy = %(calendar_policy)s, version = version + 1, updated_at = now()
WHERE id = %(id)s AND tenant_id = %(tenant_id)s AND version = %(expected_version)s
  AND status <> 'deleted'
RETURNING *
), rekeyed AS (
    UPDATE executions e
    SET concurrency_key = k.key
    FROM updated u
    CROSS JOIN LATERAL (SELECT CASE WHEN u.concurrency_limit > 0
        THEN wheel_concurrency_key(u.concurrency_key, u.concurrency_key_field,
                                   u.concurrency_limit, u.payload) END AS key) k
    WHERE e.job_id = u.id AND e.status = 'pending'
      AND e.concurrency_key IS DISTINCT FROM k.key
)
SELECT * FROM updated
