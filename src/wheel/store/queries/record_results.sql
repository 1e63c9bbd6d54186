-- See wheel_record_attempts in the schema (it also lowers the tenants'
-- in-flight counts).
SELECT accepted, job_id, scheduled_for, fence, current_fence, status::text, fire_at, attempt,
       refusal
FROM wheel_record_attempts(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[],
                           %(fences)s::bigint[], %(outcomes)s::wheel_outcome[],
                           %(executors)s::text[], %(instances)s::text[],
                           %(started)s::timestamptz[], %(finished)s::timestamptz[],
                           %(errors)s::text[], %(first)s::timestamptz,
                           %(last)s::timestamptz)
