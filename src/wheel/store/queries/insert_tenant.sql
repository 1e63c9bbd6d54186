INSERT INTO tenants (id, name, max_in_flight, http_hosts)
VALUES (%(id)s, %(name)s, %(max_in_flight)s, %(http_hosts)s::text[])
RETURNING id, name, max_in_flight, created_at, in_flight, http_hosts
