SELECT * FROM calendars WHERE id = %(id)s AND tenant_id = %(tenant_id)s
