-- The tenant of a live tenant token (an executor token is no tenant's).
SELECT tenant_id FROM api_tokens
WHERE token_sha256 = %(token_sha256)s AND revoked_at IS NULL AND role = 'tenant'
