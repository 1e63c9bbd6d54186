-- The due load as a function whose plan cannot go quadratic. Right after a
-- bulk load a day partition has no statistics; the planner then believed a
-- probe per row was a scan per row (a due load ran for 25 s until autovacuum
-- analysed the partition). The store also analyses a partition itself after
-- a bulk insert (see Occurrences.insert); this function only ever walks the
-- due index and probes jobs by primary key, so scans are off inside it.
-- (Turning scans off in the claim and record functions made things worse:
-- the planner walked a whole index as the outer side of their UPDATE joins.)

-- The loader's page: pending occurrences of active jobs in some partitions,
-- before an instant, after a keyset cursor, in firing order, with each job's
-- routing (tenant, pool, task type, overlap policy) probed by primary key;
-- with p_created_after, only rows created since (a notified insert's rows).
CREATE FUNCTION wheel_load_due(
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
           e.tenant_id, j.pool, j.task_type, j.overlap
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

-- The retry rule's probe goes by primary key only (see the comment inside).
CREATE OR REPLACE FUNCTION wheel_record_attempts(
    p_job_ids uuid[], p_scheduled_fors timestamptz[], p_fences bigint[],
    p_outcomes wheel_outcome[], p_executors text[], p_started timestamptz[],
    p_finished timestamptz[], p_errors text[]
) RETURNS TABLE (
    accepted boolean, job_id uuid, scheduled_for timestamptz, fence bigint,
    current_fence bigint, status wheel_execution_status, fire_at timestamptz, attempt integer
) LANGUAGE sql VOLATILE
SET enable_hashjoin = off SET enable_mergejoin = off  -- see wheel_claim
AS $$
    WITH input AS (
        SELECT * FROM unnest(p_job_ids, p_scheduled_fors, p_fences, p_outcomes,
                             p_executors, p_started, p_finished, p_errors)
            AS r (job_id, scheduled_for, fence, outcome, executor_id, started_at,
                  finished_at, error)
    ), probed AS (
        -- One primary-key probe per input row (LATERAL ... LIMIT 1), in input
        -- order; callers sort their batches, so concurrent batches lock in the
        -- same order and never deadlock. A row whose fence no longer matches
        -- comes back with NULLs and is reported as stale.
        SELECT i.*,
               CASE WHEN e.fence = i.fence AND e.status IN ('dispatched', 'running')
                    THEN e.job_id END AS held,
               e.attempt, e.fire_at,
               e.executor_id AS held_executor_id, e.started_at AS held_started_at
        FROM input i
        LEFT JOIN LATERAL (
            -- By primary key only, the fence and status checked outside: with a
            -- status condition in here, statistics taken while every row was
            -- pending made a partial index of leased rows look free, and under a
            -- spike each probe walked every leased row.
            SELECT e.job_id, e.attempt, e.fire_at, e.executor_id, e.started_at, e.fence,
                   e.status
            FROM executions e
            WHERE e.job_id = i.job_id AND e.scheduled_for = i.scheduled_for
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
            error = d.error,
            reason = CASE WHEN d.next_status = 'cancelled' THEN 'job deleted' ELSE e.reason END
        FROM decided d
        WHERE e.job_id = d.job_id AND e.scheduled_for = d.scheduled_for
        RETURNING e.job_id, e.scheduled_for, e.fence, e.status, e.fire_at, e.attempt
    ), logged AS (
        INSERT INTO attempts (job_id, scheduled_for, number, fence, executor_id, started_at,
                              finished_at, outcome, error)
        SELECT d.job_id, d.scheduled_for, d.attempt, d.fence, d.executor_id, d.started_at,
               d.finished_at, d.outcome, d.error
        FROM decided d
    )
    SELECT true, u.job_id, u.scheduled_for, u.fence, u.fence, u.status, u.fire_at, u.attempt
    FROM updated u
    UNION ALL
    SELECT false, p.job_id, p.scheduled_for, p.fence, e.fence, e.status, e.fire_at, e.attempt
    FROM probed p
    LEFT JOIN LATERAL (
        SELECT e.fence, e.status, e.fire_at, e.attempt
        FROM executions e
        WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for
        LIMIT 1
    ) e ON true
    WHERE p.held IS NULL
$$;
