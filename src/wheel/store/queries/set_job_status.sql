-- Move a job between statuses, only from the statuses allowed.
UPDATE jobs SET status = %(status)s, updated_at = now()
WHERE id = %(id)s AND tenant_id = %(tenant_id)s AND status = ANY(%(from_statuses)s::text[])
RETURNING *
