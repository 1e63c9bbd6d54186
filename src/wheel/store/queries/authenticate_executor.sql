-- A live executor token: its id and the executor ids (globs) it allows.
SELECT id, executor_ids FROM api_tokens
WHERE token_sha256 = %(token_sha256)s AND revoked_at IS NULL AND role = 'executor'
