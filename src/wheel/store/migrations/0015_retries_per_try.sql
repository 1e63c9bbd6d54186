-- A person's retry starts a new try with the job's full attempts, and says who made it:
-- executions.retries lists them ({"at", "by": the API token's name, "after_attempt"}).
-- A job allowing 3 attempts, retried once, has 3 more (it was dead after one more, and
-- read "failed all 4 attempts"); notifications count the attempts of the try.
ALTER TABLE executions ADD COLUMN retries jsonb NOT NULL DEFAULT '[]';

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
               -- Attempts before the current try (a person's retry starts a new one).
               coalesce((e.retries -> -1 ->> 'after_attempt')::integer, 0) AS tried,
               e.executor_id AS held_executor_id, e.started_at AS held_started_at
        FROM input i
        LEFT JOIN LATERAL (
            -- By primary key only, the fence and status checked outside: with a
            -- status condition in here, statistics taken while every row was
            -- pending made a partial index of leased rows look free, and under a
            -- spike each probe walked every leased row.
            SELECT e.job_id, e.attempt, e.fire_at, e.executor_id, e.executor_instance,
                   e.started_at, e.fence, e.status, e.retries
            FROM executions e
            WHERE e.job_id = i.job_id AND e.scheduled_for = i.scheduled_for
              AND e.scheduled_for BETWEEN p_first AND p_last
            LIMIT 1
            FOR UPDATE OF e
        ) e ON true
    ), locked AS (
        SELECT p.job_id, p.scheduled_for, p.fence, p.attempt, p.tried, p.fire_at, p.outcome,
               coalesce(p.executor_id, p.held_executor_id) AS executor_id,
               -- A run given back unstarted never started, whatever its heartbeats
               -- said (an executor heartbeats the runs waiting there for a slot).
               CASE WHEN p.outcome <> 'not_started'
                    THEN coalesce(p.started_at, p.held_started_at) END AS started_at,
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
                                        l.backoff_base_ms * power(2::float8, least(l.attempt - l.tried - 1, 60)))
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
            WHEN l.attempt - l.tried >= l.max_attempts THEN 'dead'
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

CREATE OR REPLACE FUNCTION wheel_notify_run() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = auto
AS $$
BEGIN
    INSERT INTO notifications (tenant_id, job_id, scheduled_for, status, reason, attempt,
                               error, url)
    SELECT NEW.tenant_id, NEW.job_id, NEW.scheduled_for, NEW.status, NEW.reason,
           NEW.attempt - coalesce((NEW.retries -> -1 ->> 'after_attempt')::integer, 0),
           left(NEW.error, 4000), coalesce(nullif(j.notify_url, ''), t.notify_url)
    FROM jobs j
    JOIN tenants t ON t.id = j.tenant_id
    WHERE j.id = NEW.job_id
      AND NEW.status = ANY (t.notify_on)
      AND coalesce(nullif(j.notify_url, ''), t.notify_url) IS NOT NULL;
    RETURN NULL;
END
$$;
