-- An operator's choice of the hosts a tenant's HTTP tasks may POST to ('{}': any).
UPDATE tenants SET http_hosts = %(http_hosts)s::text[] WHERE id = %(id)s
RETURNING id, name, max_in_flight, created_at, in_flight, http_hosts
