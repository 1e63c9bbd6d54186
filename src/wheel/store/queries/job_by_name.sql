-- The tenant's job of this name that is not deleted (the jobs_tenant_name index).
SELECT * FROM jobs WHERE tenant_id = %(tenant_id)s AND name = %(name)s AND status <> 'deleted'
