-- Claim pending occurrences: pending -> dispatched, fence + 1, attempt + 1, a
-- lease on the database clock. Only in partitions whose epoch is still the
-- caller's: the epoch rows are share-locked, so a new owner's epoch write
-- either waits for this claim or makes it claim nothing. Rows another claim
-- holds are skipped, never waited on: concurrent claimers get disjoint sets.
WITH owned AS (
    SELECT pe.partition
    FROM partition_epochs pe
    JOIN unnest(%(partitions)s::integer[], %(epochs)s::bigint[]) AS mine (partition, epoch)
      ON pe.partition = mine.partition AND pe.epoch = mine.epoch
    FOR SHARE OF pe
), picked AS (
    SELECT e.job_id, e.scheduled_for
    FROM executions e
    JOIN unnest(%(job_ids)s::uuid[], %(scheduled_fors)s::timestamptz[]) AS w (job_id, scheduled_for)
      ON e.job_id = w.job_id AND e.scheduled_for = w.scheduled_for
    JOIN jobs j ON j.id = e.job_id
    WHERE e.status = 'pending'
      AND j.status = 'active'
      AND e.partition IN (SELECT partition FROM owned)
    ORDER BY e.job_id, e.scheduled_for
    FOR UPDATE OF e SKIP LOCKED
)
UPDATE executions e
SET status = 'dispatched',
    fence = e.fence + 1,
    attempt = e.attempt + 1,
    lease_until = clock_timestamp() + make_interval(secs => %(lease_s)s),
    dispatched_at = clock_timestamp(),
    executor_id = NULL,
    started_at = NULL,
    finished_at = NULL,
    error = NULL
FROM picked p, jobs j
WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for AND j.id = e.job_id
  AND e.status = 'pending'
RETURNING e.job_id, e.scheduled_for, e.tenant_id, e.partition, e.fence, e.attempt,
          e.lease_until, e.job_version, j.task_type, j.payload, j.pool, e.priority, j.timeout_ms
