SELECT * FROM jobs WHERE id = %(id)s AND tenant_id = %(tenant_id)s
