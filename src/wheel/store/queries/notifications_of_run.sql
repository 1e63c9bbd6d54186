SELECT id, status::text AS status, url, tries, created_at, next_at, delivered_at, gave_up_at,
       last_error, last_status_code, event
FROM notifications
WHERE tenant_id = %(tenant_id)s AND job_id = %(job_id)s AND scheduled_for = %(scheduled_for)s
ORDER BY created_at, id
