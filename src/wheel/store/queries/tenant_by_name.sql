-- A tenant by its (unique) name.
SELECT id, name, max_in_flight, created_at FROM tenants WHERE name = %(name)s
