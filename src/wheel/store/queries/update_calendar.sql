-- Replace a calendar's definition if it is still at the version the edit was based on.
UPDATE calendars
SET description = %(description)s, definition = %(definition)s,
    version = version + 1, updated_at = now()
WHERE id = %(id)s AND tenant_id = %(tenant_id)s AND version = %(expected_version)s
RETURNING *
