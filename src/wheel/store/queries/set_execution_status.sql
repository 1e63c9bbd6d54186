-- A person's decision on one execution: retry (back to pending, firing now, a new try
-- with the job's full attempts, kept in retries with who asked) or cancel, only from
-- the statuses that allow it.
UPDATE executions
SET status = %(status)s::wheel_execution_status,
    reason = %(reason)s,
    fire_at = CASE WHEN %(status)s = 'pending' THEN now() ELSE fire_at END,
    pending_since = CASE WHEN %(status)s = 'pending' THEN now() ELSE pending_since END,
    finished_at = CASE WHEN %(status)s = 'pending' THEN NULL ELSE now() END,
    retries = CASE WHEN %(status)s = 'pending'
                   THEN retries || jsonb_build_array(jsonb_build_object(
                       'at', now(),
                       'by', coalesce((SELECT t.name FROM api_tokens t
                                       WHERE t.token_sha256 = %(by_token)s::bytea
                                         AND t.tenant_id = %(tenant_id)s), 'a person'),
                       'after_attempt', attempt))
                   ELSE retries END
WHERE job_id = %(job_id)s AND scheduled_for = %(scheduled_for)s
  AND tenant_id = %(tenant_id)s
  AND status::text = ANY(%(from_statuses)s::text[])
  -- a deleted job's executions are never sent back to pending
  AND (%(status)s <> 'pending'
       OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = %(job_id)s AND j.status <> 'deleted'))
RETURNING job_id, partition
