SELECT id, name, max_in_flight, created_at, in_flight FROM tenants WHERE id = %(id)s
