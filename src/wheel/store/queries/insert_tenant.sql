INSERT INTO tenants (id, name, max_in_flight) VALUES (%(id)s, %(name)s, %(max_in_flight)s)
RETURNING id, name, max_in_flight, created_at
