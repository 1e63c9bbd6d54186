INSERT INTO api_tokens (id, tenant_id, name, token_sha256)
SELECT %(id)s, t.id, %(name)s, %(token_sha256)s FROM tenants t WHERE t.id = %(tenant_id)s
RETURNING id, tenant_id, name, created_at, revoked_at
