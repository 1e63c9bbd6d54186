-- Resume a paused job: active again, its pause note, who and when cleared.
UPDATE jobs
SET status = 'active', pause_note = '', paused_by = '', paused_at = NULL, updated_at = now()
WHERE id = %(id)s AND tenant_id = %(tenant_id)s AND status = 'paused'
RETURNING *
