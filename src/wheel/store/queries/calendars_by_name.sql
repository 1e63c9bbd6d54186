-- The tenant's calendars among these names (another tenant's are never seen).
SELECT * FROM calendars WHERE tenant_id = %(tenant_id)s AND name = ANY (%(names)s::text[])
