INSERT INTO api_tokens (id, tenant_id, name, token_sha256, role, executor_ids)
VALUES (%(id)s, NULL, %(name)s, %(token_sha256)s, 'executor', %(executor_ids)s::text[])
RETURNING id, tenant_id, name, created_at, revoked_at
