-- A tenant's cap holds back its runs due now, not those handed to executors ahead of
-- their instant (a planned spike of one tenant starts on time; the runs count once
-- claimed, so while they run its further due runs wait). A run handed over ahead keeps
-- a whole lease past its instant, however early it went: its lease starts at the later
-- of the claim and the instant.
CREATE OR REPLACE FUNCTION wheel_claim(
    p_partitions integer[], p_epochs bigint[], p_job_ids uuid[], p_scheduled_fors timestamptz[],
    p_executor_ids text[], p_instances text[], p_lease_s float8, p_ahead_s float8,
    p_first timestamptz, p_last timestamptz
) RETURNS TABLE (
    state text, job_id uuid, scheduled_for timestamptz, tenant_id uuid, partition integer,
    fence bigint, attempt integer, lease_until timestamptz, job_version bigint, task_type text,
    payload bytea, pool text, priority integer, timeout_ms bigint, fire_at timestamptz,
    http_url text, http_retry_client_errors boolean
) LANGUAGE sql VOLATILE
SET enable_hashjoin = off SET enable_mergejoin = off SET enable_seqscan = off
SET plan_cache_mode = force_custom_plan  -- one day partition, no run-time pruning: see executions
AS $$
    WITH owned AS (
        -- The partitions whose epoch is still the caller's, as one array: each key's
        -- check is then a scan of a small array, not a join.
        SELECT array_agg(pe.partition) AS partitions, min(pe.node_id) AS node_id
        FROM (
            SELECT pe.partition, pe.node_id
            FROM partition_epochs pe
            JOIN unnest(p_partitions, p_epochs) AS mine (partition, epoch)
              ON pe.partition = mine.partition AND pe.epoch = mine.epoch
            FOR SHARE OF pe
        ) pe
    ), picked AS (
        -- LATERAL ... LIMIT 1: one primary-key probe per requested key, whatever
        -- the statistics say (a fresh partition must not turn this into a scan).
        SELECT e.job_id, e.scheduled_for, e.fire_at, e.tenant_id, w.executor_id, w.instance,
               w.ord,
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
        FROM unnest(p_job_ids, p_scheduled_fors, p_executor_ids, p_instances)
             WITH ORDINALITY AS w (job_id, scheduled_for, executor_id, instance, ord)
        CROSS JOIN owned
        CROSS JOIN LATERAL (
            SELECT e.job_id, e.scheduled_for, e.fire_at, e.job_version, e.attempt, e.trigger,
                   e.tenant_id
            FROM executions e
            WHERE e.job_id = w.job_id AND e.scheduled_for = w.scheduled_for
              AND e.scheduled_for BETWEEN p_first AND p_last
              AND e.status = 'pending'
              AND e.partition = ANY(owned.partitions)
            LIMIT 1
            FOR UPDATE OF e SKIP LOCKED
        ) e
        CROSS JOIN LATERAL (
            SELECT j.overlap, j.status, j.schedule_kind, j.version
            FROM jobs j WHERE j.id = e.job_id LIMIT 1
        ) j
        WHERE j.status = 'active'
          -- A scheduled run of an edited cron job waits for the materialiser to
          -- carry or supersede it; a retry or a manual run goes ahead (under the
          -- job's current definition, like every claim).
          AND (j.schedule_kind <> 'cron' OR e.job_version = j.version OR e.attempt > 0
               OR e.trigger <> 'schedule')
    ), ranked AS (
        -- The n-th run due now each tenant would get, in the caller's order.
        SELECT p.*,
               row_number() OVER (
                   PARTITION BY p.tenant_id, p.state = 'claimed',
                                p.fire_at <= clock_timestamp() + interval '1 second'
                   ORDER BY p.ord) AS nth
        FROM picked p
    ), room AS (
        -- The tenant's in-flight cap holds across the cluster: the runs beyond its
        -- room are left 'capped'. The room is read from this statement's snapshot,
        -- unlocked; the caller's statement adds what it claimed with
        -- wheel_count_in_flight as its last step, which refuses an overshoot (a
        -- concurrent claim committed meanwhile: the claim is rolled back and redone
        -- with the tenants' rows locked first). Locked here, every claim and record
        -- of a tenant queued behind one another for whole statements.
        SELECT t.id, t.max_in_flight - t.in_flight AS free
        FROM tenants t
        WHERE t.id IN (SELECT r.tenant_id FROM ranked r WHERE r.state = 'claimed')
    ), decided AS (
        SELECT r.job_id, r.scheduled_for, r.fire_at, r.executor_id, r.instance,
               CASE WHEN r.state = 'claimed'
                         -- The cap holds back runs due now; one handed over ahead of its
                         -- instant goes (a planned spike starts on time) and counts.
                         AND r.fire_at <= clock_timestamp() + interval '1 second'
                         AND r.nth > coalesce((SELECT m.free FROM room m WHERE m.id = r.tenant_id), 0)
                    THEN 'capped' ELSE r.state END AS state
        FROM ranked r
    ), claimed AS (
        UPDATE executions e
        SET status = 'dispatched',
            fence = e.fence + 1,
            attempt = e.attempt + 1,
            -- A run handed over ahead of its instant keeps a whole lease past it.
            lease_until = greatest(clock_timestamp(), e.fire_at) + make_interval(secs => p_lease_s),
            dispatched_at = clock_timestamp(),
            executor_id = p.executor_id,
            executor_instance = p.instance,
            started_at = NULL,
            finished_at = NULL,
            error = NULL,
            claimed_by = (SELECT node_id FROM owned)
        FROM decided p
        WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for
          AND e.scheduled_for BETWEEN p_first AND p_last
          AND p.state = 'claimed'
        RETURNING e.job_id, e.scheduled_for, e.tenant_id, e.partition, e.fence, e.attempt,
                  e.lease_until, e.job_version, e.priority, e.fire_at
    ), skipped AS (
        UPDATE executions e
        SET status = 'skipped',
            reason = 'overlap: the previous run was still running (policy skip)',
            finished_at = clock_timestamp()
        FROM decided p
        WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for
          AND e.scheduled_for BETWEEN p_first AND p_last
          AND p.state = 'skipped'
        RETURNING e.job_id, e.scheduled_for, e.fire_at
    )
    SELECT 'claimed', c.job_id, c.scheduled_for, c.tenant_id, c.partition, c.fence, c.attempt,
           c.lease_until, c.job_version, j.task_type, j.payload, j.pool, c.priority,
           j.timeout_ms, c.fire_at, j.http_url, j.http_retry_client_errors
    FROM claimed c
    CROSS JOIN LATERAL (
        SELECT j.task_type, j.payload, j.pool, j.timeout_ms, j.http_url, j.http_retry_client_errors
        FROM jobs j WHERE j.id = c.job_id LIMIT 1
    ) j
    UNION ALL
    SELECT 'skipped', s.job_id, s.scheduled_for, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, s.fire_at, NULL, NULL
    FROM skipped s
    UNION ALL
    SELECT p.state, p.job_id, p.scheduled_for, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, p.fire_at, NULL, NULL
    FROM decided p
    WHERE p.state IN ('blocked', 'early', 'capped')
$$;
