-- A tenant's jobs, newest first, after a keyset cursor; deleted ones excluded.
SELECT * FROM jobs
WHERE tenant_id = %(tenant_id)s
  AND status <> 'deleted'
  AND (created_at, id) < (%(after_created_at)s, %(after_id)s::uuid)
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s
