-- A tenant's calendars by name, after a keyset cursor (the last name of the page before).
SELECT * FROM calendars
WHERE tenant_id = %(tenant_id)s AND name > %(after_name)s
ORDER BY name
LIMIT %(limit)s
