-- The tenant's jobs among these ids (deleted ones included: their runs still list).
SELECT * FROM jobs WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::uuid[])
