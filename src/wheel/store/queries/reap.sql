-- Expired leases of the caller's partitions (epoch-fenced like a claim)
-- count as failed attempts and follow the same rule as any result. The spared
-- attempts are left alone: their executor's result or heartbeat reached the
-- caller and waits to be recorded (the lease lapsed on the store's side).
WITH owned AS (
    SELECT pe.partition
    FROM partition_epochs pe
    JOIN unnest(%(partitions)s::integer[], %(epochs)s::bigint[]) AS mine (partition, epoch)
      ON pe.partition = mine.partition AND pe.epoch = mine.epoch
    FOR SHARE OF pe
), expired AS (
    SELECT e.job_id, e.scheduled_for, e.fence
    FROM executions e
    -- The owned partitions as one array and the clock read once, both index bounds of
    -- executions_leases: the pass reads the expired leases only, not every run in
    -- flight once per owned partition (a join to `owned` and a per-row clock, which
    -- cannot bound an index, did that when a day's statistics were taken with every
    -- run pending).
    WHERE e.partition = ANY (ARRAY(SELECT partition FROM owned))
      -- In flight (a lease is set exactly then: the table's CHECK), expired. Not the
      -- statuses: they would let the planner take executions_leased_by_job whole
      -- (see executions_leases in the schema).
      AND e.lease_until < (SELECT clock_timestamp())
      AND NOT EXISTS (
          SELECT 1
          FROM unnest(%(spare_job_ids)s::uuid[], %(spare_scheduled_fors)s::timestamptz[],
                      %(spare_fences)s::bigint[]) AS s (job_id, scheduled_for, fence)
          WHERE s.job_id = e.job_id AND s.scheduled_for = e.scheduled_for
            AND s.fence = e.fence
      )
    ORDER BY e.lease_until
    LIMIT %(limit)s
    FOR UPDATE OF e SKIP LOCKED
), batch AS (
    -- One call per UTC day: each records one day partition (see "One day per statement"
    -- in the schema).
    SELECT array_agg(job_id) AS job_ids, array_agg(scheduled_for) AS scheduled_fors,
           array_agg(fence) AS fences, count(*) AS n,
           min(scheduled_for) AS first, max(scheduled_for) AS last
    FROM expired
    GROUP BY date_trunc('day', scheduled_for AT TIME ZONE 'UTC')
)
SELECT r.accepted, r.job_id, r.scheduled_for, r.fence, r.current_fence, r.status::text, r.fire_at,
       r.attempt, r.refusal
FROM batch,
     LATERAL wheel_record_attempts(
         batch.job_ids, batch.scheduled_fors, batch.fences,
         array_fill('lease_expired'::wheel_outcome, ARRAY[batch.n::integer]),
         array_fill(NULL::text, ARRAY[batch.n::integer]),
         array_fill(NULL::text, ARRAY[batch.n::integer]),
         array_fill(NULL::timestamptz, ARRAY[batch.n::integer]),
         array_fill(NULL::timestamptz, ARRAY[batch.n::integer]),
         array_fill('lease expired: no result or heartbeat in time'::text,
                    ARRAY[batch.n::integer]),
         batch.first, batch.last) r
WHERE batch.n > 0
