-- Take up to `limit` due notifications for one try each: the try is counted and
-- next_at moves a lease ahead, so a sender that dies leaves them due again then.
-- With each, what its body and signature need: the job's name, the tenant's
-- secret and, within a day of a rotation, the previous one.
WITH due AS (
    SELECT id FROM notifications
    WHERE delivered_at IS NULL AND gave_up_at IS NULL AND next_at <= clock_timestamp()
    ORDER BY next_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE notifications n
SET tries = n.tries + 1,
    next_at = clock_timestamp() + make_interval(secs => %(lease_s)s),
    claimed_by = %(node_id)s
FROM due, tenants t
WHERE n.id = due.id AND t.id = n.tenant_id
RETURNING n.id, n.tenant_id, n.job_id, n.scheduled_for, n.status::text AS status, n.reason,
          n.attempt, n.error, n.url, n.created_at, n.tries,
          (SELECT j.name FROM jobs j WHERE j.id = n.job_id) AS job_name,
          t.notify_secret AS secret,
          CASE WHEN t.notify_secret_rotated_at > clock_timestamp() - interval '1 day'
               THEN t.notify_secret_previous END AS previous_secret,
          n.event, n.deadline_at, n.streak, n.streak_from
