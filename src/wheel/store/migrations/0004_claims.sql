-- Two changes to the claim path, in one migration:
--
-- Record which node claimed an occurrence, for `explain`: the claim already
-- reads the partition's epoch row, which names its owner.
--
-- A manual trigger or a backfill is asked for by a person, and a retry is the
-- same run again: the overlap policy must not skip them. While another run of
-- the job is leased they are 'blocked' (never 'skipped'), and the due load
-- marks them 'wait' so the node keeps every such run queued behind the
-- running one, not just one.
ALTER TABLE executions ADD COLUMN claimed_by text;

CREATE OR REPLACE FUNCTION wheel_load_due(
    p_partitions integer[], p_before timestamptz, p_after_fire_at timestamptz,
    p_after_job_id uuid, p_after_scheduled_for timestamptz, p_limit integer,
    p_created_after timestamptz
) RETURNS TABLE (
    job_id uuid, scheduled_for timestamptz, partition integer, fire_at timestamptz,
    priority integer, job_version bigint, tenant_id uuid, pool text, task_type text,
    overlap text
) LANGUAGE sql STABLE
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
    SELECT e.job_id, e.scheduled_for, e.partition, e.fire_at, e.priority, e.job_version,
           e.tenant_id, j.pool, j.task_type,
           -- A manual or backfilled run, or a retry, is never skipped by the overlap
           -- policy: it waits.
           CASE WHEN (e.trigger <> 'schedule' OR e.attempt > 0) AND j.overlap <> 'allow'
                THEN 'wait' ELSE j.overlap END
    FROM executions e
    CROSS JOIN LATERAL (
        SELECT j.pool, j.task_type, j.overlap
        FROM jobs j
        WHERE j.id = e.job_id AND j.status = 'active'
        LIMIT 1
    ) j
    WHERE e.partition = ANY(p_partitions)
      AND e.status = 'pending'
      AND e.fire_at < p_before
      AND (e.fire_at, e.job_id, e.scheduled_for)
          > (p_after_fire_at, p_after_job_id, p_after_scheduled_for)
      AND (p_created_after IS NULL OR e.created_at >= p_created_after)
    ORDER BY e.fire_at, e.job_id, e.scheduled_for
    LIMIT p_limit
$$;

CREATE OR REPLACE FUNCTION wheel_claim(
    p_partitions integer[], p_epochs bigint[], p_job_ids uuid[], p_scheduled_fors timestamptz[],
    p_lease_s float8, p_ahead_s float8
) RETURNS TABLE (
    state text, job_id uuid, scheduled_for timestamptz, tenant_id uuid, partition integer,
    fence bigint, attempt integer, lease_until timestamptz, job_version bigint, task_type text,
    payload bytea, pool text, priority integer, timeout_ms bigint, fire_at timestamptz
) LANGUAGE sql VOLATILE
SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
    WITH owned AS (
        SELECT pe.partition, pe.node_id
        FROM partition_epochs pe
        JOIN unnest(p_partitions, p_epochs) AS mine (partition, epoch)
          ON pe.partition = mine.partition AND pe.epoch = mine.epoch
        FOR SHARE OF pe
    ), picked AS (
        -- LATERAL ... LIMIT 1: one primary-key probe per requested key, whatever
        -- the statistics say (a fresh partition must not turn this into a scan).
        SELECT e.job_id, e.scheduled_for, e.fire_at,
               CASE
                   WHEN e.fire_at > clock_timestamp() + make_interval(secs => p_ahead_s)
                       THEN 'early'
                   WHEN j.overlap <> 'allow' AND EXISTS (
                       SELECT 1 FROM executions o
                       WHERE o.job_id = e.job_id AND o.status IN ('dispatched', 'running'))
                       THEN CASE WHEN j.overlap = 'skip' AND e.trigger = 'schedule'
                                      AND e.attempt = 0
                                 THEN 'skipped' ELSE 'blocked' END
                   ELSE 'claimed'
               END AS state
        FROM unnest(p_job_ids, p_scheduled_fors) AS w (job_id, scheduled_for)
        CROSS JOIN LATERAL (
            SELECT e.job_id, e.scheduled_for, e.fire_at, e.job_version, e.attempt, e.trigger
            FROM executions e
            WHERE e.job_id = w.job_id AND e.scheduled_for = w.scheduled_for
              AND e.status = 'pending'
              AND e.partition IN (SELECT partition FROM owned)
            LIMIT 1
            FOR UPDATE OF e SKIP LOCKED
        ) e
        JOIN jobs j ON j.id = e.job_id
        WHERE j.status = 'active'
          -- A scheduled run of an edited cron job waits for the materialiser to
          -- carry or supersede it; a retry or a manual run goes ahead (under the
          -- job's current definition, like every claim).
          AND (j.schedule_kind <> 'cron' OR e.job_version = j.version OR e.attempt > 0
               OR e.trigger <> 'schedule')
    ), claimed AS (
        UPDATE executions e
        SET status = 'dispatched',
            fence = e.fence + 1,
            attempt = e.attempt + 1,
            lease_until = clock_timestamp() + make_interval(secs => p_lease_s),
            dispatched_at = clock_timestamp(),
            executor_id = NULL,
            started_at = NULL,
            finished_at = NULL,
            error = NULL,
            claimed_by = o.node_id
        FROM picked p, jobs j, owned o
        WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for AND j.id = e.job_id
          AND o.partition = e.partition AND p.state = 'claimed'
        RETURNING e.job_id, e.scheduled_for, e.tenant_id, e.partition, e.fence, e.attempt,
                  e.lease_until, e.job_version, j.task_type, j.payload, j.pool, e.priority,
                  j.timeout_ms, e.fire_at
    ), skipped AS (
        UPDATE executions e
        SET status = 'skipped',
            reason = 'overlap: the previous run was still running (policy skip)',
            finished_at = clock_timestamp()
        FROM picked p
        WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for AND p.state = 'skipped'
        RETURNING e.job_id, e.scheduled_for, e.fire_at
    )
    SELECT 'claimed', c.job_id, c.scheduled_for, c.tenant_id, c.partition, c.fence, c.attempt,
           c.lease_until, c.job_version, c.task_type, c.payload, c.pool, c.priority,
           c.timeout_ms, c.fire_at
    FROM claimed c
    UNION ALL
    SELECT 'skipped', s.job_id, s.scheduled_for, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, s.fire_at
    FROM skipped s
    UNION ALL
    SELECT p.state, p.job_id, p.scheduled_for, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, p.fire_at
    FROM picked p
    WHERE p.state IN ('blocked', 'early')
$$;
