-- A new calendar of a tenant (a name it already uses: calendars_tenant_name refuses it).
INSERT INTO calendars (id, tenant_id, name, description, definition)
VALUES (%(id)s, %(tenant_id)s, %(name)s, %(description)s, %(definition)s)
RETURNING *
