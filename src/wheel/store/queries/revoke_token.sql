UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
WHERE id = %(id)s
RETURNING id, tenant_id, name, created_at, revoked_at
