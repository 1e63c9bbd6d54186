-- The business calendars jobs name, by (tenant, name) pairs: a job names only its own
-- tenant's calendars (wheel.store.materialising.calendars_of).
SELECT c.*
FROM unnest(%(tenant_ids)s::uuid[], %(names)s::text[]) AS u (tenant_id, name)
JOIN calendars c ON c.tenant_id = u.tenant_id AND c.name = u.name
