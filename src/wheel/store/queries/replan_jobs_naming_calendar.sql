-- A calendar was edited: every job of its tenant naming it grows its version, so the
-- materialiser re-plans its runs as after the job's own edit (see materialiser).
UPDATE jobs
SET version = version + 1
WHERE tenant_id = %(tenant_id)s AND calendars @> ARRAY[%(name)s]::text[] AND calendars <> '{}'
  AND status <> 'deleted'
RETURNING id
