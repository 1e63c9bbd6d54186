-- HTTP tasks, continued: a claim hands over the job's URL and its 4xx rule; a
-- 'rejected' attempt makes the run dead at once, whatever attempts remain.

DROP FUNCTION wheel_claim(integer[], bigint[], uuid[], timestamptz[], text[], text[], float8, float8,
                          timestamptz, timestamptz);

CREATE FUNCTION wheel_claim(
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
        -- The n-th run each tenant would get, in the caller's order.
        SELECT p.*,
               row_number() OVER (PARTITION BY p.tenant_id, p.state = 'claimed' ORDER BY p.ord)
                   AS nth
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
                         AND r.nth > coalesce((SELECT m.free FROM room m WHERE m.id = r.tenant_id), 0)
                    THEN 'capped' ELSE r.state END AS state
        FROM ranked r
    ), claimed AS (
        UPDATE executions e
        SET status = 'dispatched',
            fence = e.fence + 1,
            attempt = e.attempt + 1,
            lease_until = clock_timestamp() + make_interval(secs => p_lease_s),
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


CREATE OR REPLACE FUNCTION wheel_record_attempts(
    p_job_ids uuid[], p_scheduled_fors timestamptz[], p_fences bigint[],
    p_outcomes wheel_outcome[], p_executors text[], p_instances text[], p_started timestamptz[],
    p_finished timestamptz[], p_errors text[], p_first timestamptz, p_last timestamptz
) RETURNS TABLE (
    accepted boolean, job_id uuid, scheduled_for timestamptz, fence bigint,
    current_fence bigint, status wheel_execution_status, fire_at timestamptz, attempt integer,
    refusal text
) LANGUAGE sql VOLATILE
SET enable_hashjoin = off SET enable_mergejoin = off SET enable_seqscan = off  -- see wheel_claim
SET plan_cache_mode = force_custom_plan  -- one day partition, no run-time pruning: see executions
AS $$
    WITH input AS (
        SELECT * FROM unnest(p_job_ids, p_scheduled_fors, p_fences, p_outcomes,
                             p_executors, p_instances, p_started, p_finished, p_errors)
            AS r (job_id, scheduled_for, fence, outcome, executor_id, instance, started_at,
                  finished_at, error)
    ), probed AS (
        -- One primary-key probe per input row (LATERAL ... LIMIT 1), in input
        -- order; callers sort their batches, so concurrent batches lock in the
        -- same order and never deadlock. A row whose fence no longer matches
        -- comes back with NULLs and is reported as stale. A row reported with an
        -- instance (an executor's report) counts only from the executor process
        -- the run was dispatched to; without one it is the node's own (the reaper,
        -- a dispatch that never left the node).
        SELECT i.*,
               CASE WHEN e.fence = i.fence AND e.status IN ('dispatched', 'running')
                         AND (i.instance IS NULL
                              OR (e.executor_id = i.executor_id
                                  AND e.executor_instance = i.instance))
                    THEN e.job_id END AS held,
               e.fence = i.fence AND e.status IN ('dispatched', 'running') AS fence_held,
               e.attempt, e.fire_at,
               e.executor_id AS held_executor_id, e.started_at AS held_started_at
        FROM input i
        LEFT JOIN LATERAL (
            -- By primary key only, the fence and status checked outside: with a
            -- status condition in here, statistics taken while every row was
            -- pending made a partial index of leased rows look free, and under a
            -- spike each probe walked every leased row.
            SELECT e.job_id, e.attempt, e.fire_at, e.executor_id, e.executor_instance,
                   e.started_at, e.fence, e.status
            FROM executions e
            WHERE e.job_id = i.job_id AND e.scheduled_for = i.scheduled_for
              AND e.scheduled_for BETWEEN p_first AND p_last
            LIMIT 1
            FOR UPDATE OF e
        ) e ON true
    ), locked AS (
        SELECT p.job_id, p.scheduled_for, p.fence, p.attempt, p.fire_at, p.outcome,
               coalesce(p.executor_id, p.held_executor_id) AS executor_id,
               coalesce(p.started_at, p.held_started_at) AS started_at,
               coalesce(p.finished_at, clock_timestamp()) AS finished_at,
               p.error, j.max_attempts, j.idempotent, j.backoff_base_ms, j.backoff_cap_ms,
               j.status AS job_status
        FROM probed p
        JOIN jobs j ON j.id = p.job_id
        WHERE p.held IS NOT NULL
    ), decided AS (
        SELECT l.*, s.next_status,
               CASE
                   WHEN s.next_status = 'pending' AND l.outcome = 'not_started'
                       THEN clock_timestamp()
                   WHEN s.next_status = 'pending' THEN clock_timestamp() + make_interval(secs =>
                       random() * least(l.backoff_cap_ms::float8,
                                        l.backoff_base_ms * power(2::float8, least(l.attempt - 1, 60)))
                       / 1000.0)
                   ELSE l.fire_at
               END AS next_fire_at,
               CASE WHEN l.outcome = 'not_started' THEN greatest(l.attempt - 1, 0)
                    ELSE l.attempt END AS next_attempt
        FROM locked l
        CROSS JOIN LATERAL (SELECT CASE
            WHEN l.outcome = 'succeeded' THEN 'succeeded'
            WHEN l.job_status = 'deleted' THEN 'cancelled'  -- never back to pending: it would
            WHEN l.outcome = 'not_started' THEN 'pending'   -- wait forever for a claim
            WHEN l.outcome = 'rejected' THEN 'dead'         -- a failure never retried
            WHEN NOT l.idempotent THEN 'needs_review'
            WHEN l.attempt >= l.max_attempts THEN 'dead'
            ELSE 'pending'
        END::wheel_execution_status AS next_status) s
    ), updated AS (
        UPDATE executions e
        SET status = d.next_status,
            fire_at = d.next_fire_at,
            attempt = d.next_attempt,
            lease_until = NULL,
            executor_id = d.executor_id,
            started_at = d.started_at,
            finished_at = CASE WHEN d.next_status = 'pending' THEN NULL ELSE d.finished_at END,
            pending_since = CASE WHEN d.next_status = 'pending' THEN clock_timestamp()
                                 ELSE e.pending_since END,
            error = d.error,
            reason = CASE WHEN d.next_status = 'cancelled' THEN 'job deleted' ELSE e.reason END
        FROM decided d
        WHERE e.job_id = d.job_id AND e.scheduled_for = d.scheduled_for
          AND e.scheduled_for BETWEEN p_first AND p_last
        RETURNING e.job_id, e.scheduled_for, e.fence, e.status, e.fire_at, e.attempt,
                  e.tenant_id
    ), logged AS (
        INSERT INTO attempts (job_id, scheduled_for, number, fence, executor_id, started_at,
                              finished_at, outcome, error)
        SELECT d.job_id, d.scheduled_for, d.attempt, d.fence, d.executor_id, d.started_at,
               d.finished_at, d.outcome, d.error
        FROM decided d
    ), released AS (
        -- The runs left flight: their tenants' counts go down, last (see
        -- wheel_count_in_flight).
        SELECT wheel_count_in_flight(array_agg(g.tenant_id ORDER BY g.tenant_id),
                                     array_agg(-g.n ORDER BY g.tenant_id), false) AS over
        FROM (SELECT u.tenant_id, count(*)::integer AS n FROM updated u
              GROUP BY u.tenant_id) g
    )
    SELECT true, u.job_id, u.scheduled_for, u.fence, u.fence, u.status, u.fire_at, u.attempt,
           NULL::text
    FROM released CROSS JOIN updated u
    UNION ALL
    -- Refused: 'stale' (re-dispatched since, or no longer running), or 'not_yours'
    -- (dispatched to another executor: nothing about the run is told back).
    SELECT false, p.job_id, p.scheduled_for, p.fence,
           CASE WHEN p.fence_held THEN NULL ELSE e.fence END,
           CASE WHEN p.fence_held THEN NULL ELSE e.status END,
           CASE WHEN p.fence_held THEN NULL ELSE e.fire_at END,
           CASE WHEN p.fence_held THEN NULL ELSE e.attempt END,
           CASE WHEN p.fence_held THEN 'not_yours' ELSE 'stale' END
    FROM probed p
    LEFT JOIN LATERAL (
        SELECT e.fence, e.status, e.fire_at, e.attempt
        FROM executions e
        WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for
          AND e.scheduled_for BETWEEN p_first AND p_last
        LIMIT 1
    ) e ON true
    WHERE p.held IS NULL
$$;
