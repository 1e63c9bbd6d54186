-- Replace a job's definition if it is still at the version the edit was based on.
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
    http_retry_client_errors = %(http_retry_client_errors)s, version = version + 1, updated_at = now(),
    calendars = %(calendars)s, calendar_policy = %(calendar_policy)s
WHERE id = %(id)s AND tenant_id = %(tenant_id)s AND version = %(expected_version)s
  AND status <> 'deleted'
RETURNING *
