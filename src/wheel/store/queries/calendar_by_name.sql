SELECT * FROM calendars WHERE tenant_id = %(tenant_id)s AND name = %(name)s
