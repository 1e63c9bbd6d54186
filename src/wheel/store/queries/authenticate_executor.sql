-- Whether a token is a live executor token.
SELECT id FROM api_tokens
WHERE token_sha256 = %(token_sha256)s AND revoked_at IS NULL AND role = 'executor'
