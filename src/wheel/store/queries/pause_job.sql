-- Pause a job (from active), or give a paused one another note: the note, who paused
-- it (the calling token's name, 'a person' without one) and when (now()) are kept.
-- A paused job paused again with the note it has is left as it is (no row comes back:
-- the caller answers with the job unchanged), so a repeated pause keeps the first
-- who and when.
UPDATE jobs
SET status = 'paused',
    pause_note = %(note)s,
    paused_by = coalesce((SELECT t.name FROM api_tokens t
                          WHERE t.token_sha256 = %(by_token)s::bytea
                            AND t.tenant_id = %(tenant_id)s), 'a person'),
    paused_at = now(),
    updated_at = now()
WHERE id = %(id)s AND tenant_id = %(tenant_id)s
  AND (status = 'active' OR (status = 'paused' AND pause_note IS DISTINCT FROM %(note)s))
RETURNING *
