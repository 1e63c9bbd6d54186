-- A tenant by its (unique) name.
SELECT id, name, max_in_flight, created_at, in_flight, http_hosts FROM tenants WHERE name = %(name)s
