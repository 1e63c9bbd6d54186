-- The tenant's jobs (not deleted) that name a calendar, oldest first, a few (the refusal
-- to delete it names them). FOR SHARE: a job's edit naming it again waits for the delete.
SELECT name
FROM jobs
WHERE tenant_id = %(tenant_id)s AND calendars @> ARRAY[%(name)s]::text[] AND calendars <> '{}'
  AND status <> 'deleted'
ORDER BY created_at, id
LIMIT %(limit)s
FOR SHARE
