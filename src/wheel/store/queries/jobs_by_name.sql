-- The tenant's jobs of these names that are not deleted (the jobs_tenant_name index).
SELECT * FROM jobs
WHERE tenant_id = %(tenant_id)s AND name = ANY(%(names)s::text[]) AND status <> 'deleted'
