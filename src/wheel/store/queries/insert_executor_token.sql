INSERT INTO api_tokens (id, tenant_id, name, token_sha256, role)
VALUES (%(id)s, NULL, %(name)s, %(token_sha256)s, 'executor')
RETURNING id, tenant_id, name, created_at, revoked_at
