-- Concurrency keys. A job may name a key and a limit, or the payload field its key is
-- read from: at most `limit` of a tenant's runs with one key are dispatched or running,
-- whatever their job and node. Each run holds the key it was made with; claims count a
-- key's runs in flight as they count a tenant's (concurrency_keys, wheel_count_keys),
-- and hold the runs beyond the limit back ('at_key_limit'); every record lowers the
-- count. Runs without a key read and lock nothing more.
ALTER TABLE jobs ADD COLUMN concurrency_key text NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN concurrency_key_field text NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN concurrency_limit integer NOT NULL DEFAULT 0
    CHECK (concurrency_limit >= 0);
ALTER TABLE executions ADD COLUMN concurrency_key text;

-- A tenant's runs in flight per concurrency key (wheel.model.concurrency), across the
-- cluster: a claim holds a run with a key back while the key has as many in flight as
-- the run's job's limit (see wheel_claim); moved by wheel_count_keys, by the same
-- statements and deltas as the tenant's count. A key's row is made by its first claim.
CREATE TABLE concurrency_keys (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    key             text NOT NULL,
    in_flight       integer NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
    PRIMARY KEY (tenant_id, key)
);

-- The runs holding a concurrency key now (what explain and the lists name); runs
-- without a key have no entry.
CREATE INDEX executions_keyed_in_flight ON executions (tenant_id, concurrency_key)
    WHERE concurrency_key IS NOT NULL AND status IN ('dispatched', 'running');

-- The keyed runs' counts move by these deltas (claimed: +, recorded: -), in the
-- statement that moved the runs, right after wheel_count_in_flight: the keys' tenants'
-- rows are locked by then (a key's runs are its tenant's), so a tenant's keys move one
-- caller at a time, tenants locked first, and never deadlock; a claim redone with its
-- tenants' rows locked first (lock_tenants) reads its keys' counts as committed. A claim passes each key's room (its claimed runs' least
-- `limit - n-th with the key in the claim`): a claim that read the key's count before a
-- concurrent one committed, and went over, raises SQLSTATE WH001 (rolled back and
-- redone with the rows locked first, as for a tenant's cap). Records pass no rooms.
-- Only statements that moved runs with a key call it.
CREATE FUNCTION wheel_count_keys(
    p_tenant_ids uuid[], p_keys text[], p_deltas integer[], p_rooms integer[]
) RETURNS boolean LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    over boolean;
BEGIN
    INSERT INTO concurrency_keys (tenant_id, key)
    SELECT d.tenant_id, d.key
    FROM unnest(p_tenant_ids, p_keys, p_deltas) AS d (tenant_id, key, n)
    WHERE d.n > 0
    ORDER BY d.tenant_id, d.key
    ON CONFLICT DO NOTHING;
    PERFORM 1
    FROM concurrency_keys k
    JOIN unnest(p_tenant_ids, p_keys) AS d (tenant_id, key)
      ON k.tenant_id = d.tenant_id AND k.key = d.key
    ORDER BY k.tenant_id, k.key
    FOR UPDATE OF k;
    WITH changed AS (
        UPDATE concurrency_keys k
        SET in_flight = greatest(k.in_flight + d.n, 0)
        FROM unnest(p_tenant_ids, p_keys, p_deltas,
                    coalesce(p_rooms, array_fill(NULL::integer, ARRAY[cardinality(p_keys)])))
             AS d (tenant_id, key, n, room)
        WHERE k.tenant_id = d.tenant_id AND k.key = d.key
        RETURNING d.n > 0 AND k.in_flight - d.n > d.room AS over
    )
    SELECT coalesce(bool_or(c.over), false) INTO over FROM changed c;
    IF over THEN
        RAISE EXCEPTION 'a claim went over a concurrency key''s limit' USING ERRCODE = 'WH001';
    END IF;
    RETURN over;
END
$$;

-- A run's concurrency key from its job's columns ('' and 0: none, NULL): the key, or
-- the text of the payload's top-level field (a string, or an integer's digits; the API
-- refuses a payload without it).
CREATE FUNCTION wheel_concurrency_key(
    p_key text, p_field text, p_limit integer, p_payload bytea
) RETURNS text LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_limit = 0 THEN NULL
                WHEN p_key <> '' THEN p_key
                ELSE convert_from(p_payload, 'UTF8')::jsonb ->> p_field END
$$;

-- Record attempt results where the fence still matches, in one statement:
-- the execution moves on and the attempt is logged. Results and the reaper
-- both come here, so the rule after an attempt lives in this one place:
-- success is final; an attempt that did not start is given back; a failure
-- (or an expired lease) of a job that is not idempotent waits for a person;
-- otherwise retry with exponential backoff and full jitter until attempts
-- run out, then dead. (Inlined, not a function of its own: a function call
-- per row cost half the statement.)
-- The accepted runs' tenants' in-flight counts are lowered, last. Returns a
-- row per input: accepted, or refused as stale with the current fence and
-- status (NULL when the execution does not exist). Inputs are matched on
-- (job_id, scheduled_for, fence).
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
                  e.tenant_id, e.concurrency_key
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
    ), released_keys AS (
        -- Their concurrency keys' counts too, after the tenants' (only runs with a key).
        SELECT count(*) AS calls FROM (
            SELECT wheel_count_keys(array_agg(g.tenant_id ORDER BY g.tenant_id, g.key),
                                    array_agg(g.key ORDER BY g.tenant_id, g.key),
                                    array_agg(-g.n ORDER BY g.tenant_id, g.key), NULL)
            FROM released,
                 (SELECT u.tenant_id, u.concurrency_key AS key, count(*)::integer AS n
                  FROM updated u WHERE u.concurrency_key IS NOT NULL
                  GROUP BY u.tenant_id, u.concurrency_key) g
            HAVING count(*) > 0
        ) k
    )
    SELECT true, u.job_id, u.scheduled_for, u.fence, u.fence, u.status, u.fire_at, u.attempt,
           NULL::text
    FROM released CROSS JOIN released_keys CROSS JOIN updated u
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

DROP FUNCTION wheel_claim(integer[], bigint[], uuid[], timestamptz[], text[], text[], float8,
                          float8, timestamptz, timestamptz, text[]);

-- Claim pending occurrences: pending -> dispatched, fence + 1, attempt + 1, a
-- lease on the database clock. Only in partitions whose epoch is still the
-- caller's: the epoch rows are share-locked, so a new owner's epoch write
-- either waits for this claim or makes it claim nothing. Rows another claim
-- holds are skipped, never waited on: concurrent claimers get disjoint sets
-- and cannot deadlock. Hash and merge joins are off inside: a freshly filled
-- day partition has no statistics yet, and the planner then hashes the whole
-- partition to update a thousand rows it could probe by primary key.
--
-- Besides the claimed rows ('claimed') it reports keys it left for a reason
-- the caller acts on:
--   'misfired' a scheduled first attempt claimed later than its instant plus its
--              job's misfire grace, and 1 s (it waited: no executor served it, its tenant
--              was at its cap, its breaker was open): the job's misfire policy
--              decides, as after an outage (wheel_apply_misfire). `skip` skips it;
--              `fire_once` skips it when a later run of the job has come due (that
--              one fires instead); `fire_all` when `misfire_replay_cap` later ones
--              have. It is recorded skipped, the reason saying how long it waited
--              (and for what, `p_waited`: the caller's words, '' when it does not
--              know) and which rule skipped it. Otherwise it is claimed, late;
--   'skipped'  its job's overlap policy is 'skip' and another of its runs was in
--              flight at this run's instant and still is: handed over by then,
--              its own instant come, no result recorded. Recorded skipped, the
--              reason naming that run and its state, read in this statement;
--   'blocked'  another run of the job is in flight under policy 'queue'; or one
--              handed over after this run's instant (both waited: this one goes
--              after it, in order); or, for a manual or backfilled run or a retry,
--              any under a policy but 'allow': left pending;
--   'early'    its fire_at is later than now + p_ahead_s (an edit or a retry
--              moved it): left pending, fire_at says when;
--   'capped'   its tenant is at its in-flight cap (across the cluster): left
--              pending;
--   'at_key_limit' its concurrency key has as many runs in flight (across the
--              tenant's jobs and the cluster) as its job's limit: left pending,
--              whenever it fires (a run claimed ahead is held to the limit too).
-- Each key costs one primary-key probe of its day partition, one of its job
-- and one update, whatever the number of partitions owned (a scan of the owned
-- array, not a join) or of day partitions (p_first and p_last, the keys' first
-- and last instant: callers pass one day's keys, planned as that one partition):
-- tests/integration/store/test_claim_plan.py counts the probes. A key of an
-- overlap-limited job adds a probe of the job's leased runs (an index per day
-- partition, holding only runs in flight); a missed one, a look at the job's
-- later runs. Neither compares scheduled_for itself, so neither prunes at run time.
-- Only runs with a concurrency key look at concurrency_keys (one probe per key of
-- the claim), and only they are ranked by key: `concurrency_key` and `key_room` come
-- back for the claimed ones (NULL for the others), for the caller's count.
-- Keys not returned at all are not pending, held by another claim, of a
-- paused or deleted job, of a cron job edited since they were made (the
-- materialiser carries or supersedes them), or in a partition not ours.
CREATE FUNCTION wheel_claim(
    p_partitions integer[], p_epochs bigint[], p_job_ids uuid[], p_scheduled_fors timestamptz[],
    p_executor_ids text[], p_instances text[], p_lease_s float8, p_ahead_s float8,
    p_first timestamptz, p_last timestamptz, p_waited text[] DEFAULT NULL
) RETURNS TABLE (
    state text, job_id uuid, scheduled_for timestamptz, tenant_id uuid, partition integer,
    fence bigint, attempt integer, lease_until timestamptz, job_version bigint, task_type text,
    payload bytea, pool text, priority integer, timeout_ms bigint, fire_at timestamptz,
    http_url text, http_retry_client_errors boolean, concurrency_key text, key_room integer
) LANGUAGE sql VOLATILE
SET enable_hashjoin = off SET enable_mergejoin = off SET enable_seqscan = off
SET plan_cache_mode = force_custom_plan  -- one day partition, no run-time pruning: see executions
AS $$
    WITH owned AS (
        -- The partitions whose epoch is still the caller's, as one array: each key's
        -- check is then a scan of a small array, not a join.
        -- `decided_at`: the statement's one instant. Every decision and every time it records
        -- (missed, due, how long a run waited, dispatched_at, a lease) reads it, so a
        -- reason is true of the instant the run's row says it was decided.
        SELECT array_agg(pe.partition) AS partitions, min(pe.node_id) AS node_id,
               clock_timestamp() AS decided_at
        FROM (
            SELECT pe.partition, pe.node_id
            FROM partition_epochs pe
            JOIN unnest(p_partitions, p_epochs) AS mine (partition, epoch)
              ON pe.partition = mine.partition AND pe.epoch = mine.epoch
            FOR SHARE OF pe
        ) pe
    ), seen AS (
        -- LATERAL ... LIMIT 1: one primary-key probe per requested key, whatever
        -- the statistics say (a fresh partition must not turn this into a scan).
        SELECT e.job_id, e.scheduled_for, e.fire_at, e.tenant_id, e.partition, e.trigger,
               e.attempt, w.executor_id, w.instance, w.ord, w.waited, j.overlap, j.misfire,
               j.misfire_grace_ms, j.misfire_replay_cap, e.concurrency_key, j.concurrency_limit,
               e.fire_at > (SELECT o.decided_at FROM owned o) + make_interval(secs => p_ahead_s) AS early,
               -- Missed: a scheduled first attempt past its instant and its grace (a
               -- second at least: one due less than that ago is being claimed, not
               -- waiting for anything).
               e.trigger = 'schedule' AND e.attempt = 0
                   AND e.fire_at + make_interval(secs => greatest(j.misfire_grace_ms, 1000) / 1000.0)
                       < (SELECT o.decided_at FROM owned o) AS missed
        FROM unnest(p_job_ids, p_scheduled_fors, p_executor_ids, p_instances,
                    coalesce(p_waited, array_fill(''::text, ARRAY[cardinality(p_job_ids)])))
             WITH ORDINALITY AS w (job_id, scheduled_for, executor_id, instance, waited, ord)
        CROSS JOIN owned
        CROSS JOIN LATERAL (
            SELECT e.job_id, e.scheduled_for, e.fire_at, e.job_version, e.attempt, e.trigger,
                   e.tenant_id, e.partition, e.concurrency_key
            FROM executions e
            WHERE e.job_id = w.job_id AND e.scheduled_for = w.scheduled_for
              AND e.scheduled_for BETWEEN p_first AND p_last
              AND e.status = 'pending'
              AND e.partition = ANY(owned.partitions)
            LIMIT 1
            FOR UPDATE OF e SKIP LOCKED
        ) e
        CROSS JOIN LATERAL (
            SELECT j.overlap, j.status, j.schedule_kind, j.version, j.misfire,
                   j.misfire_grace_ms, j.misfire_replay_cap, j.concurrency_limit
            FROM jobs j WHERE j.id = e.job_id LIMIT 1
        ) j
        WHERE j.status = 'active'
          -- A scheduled run of an edited recurring job waits for the materialiser to
          -- carry or supersede it; a retry or a manual run goes ahead (under the
          -- job's current definition, like every claim).
          AND (j.schedule_kind IN ('now', 'at') OR e.job_version = j.version OR e.attempt > 0
               OR e.trigger <> 'schedule')
    ), looked AS (
        -- A missed run: how many of its job's later scheduled runs have come due (by
        -- this statement's start) and wait, or are in flight, counted up to the most
        -- the policy needs. Later and come due by instant (scheduled_for), not fire_at:
        -- an earlier run's retry fires after this run's instant and is no later run,
        -- and a later run claimed ahead of its instant (lead_ms) has not come due. A
        -- skipped or cancelled one does not fire instead; one that already ran is not
        -- looked for (runs are claimed in order). Runs that were not missed are not
        -- looked at. The fire_at bounds are the waiting runs' index bounds; the
        -- instants are filters written `scheduled_for + interval '0'`, which the
        -- planner cannot prune by: these probes span every day partition, and a
        -- partition key compared with this row's values would prune at run time.
        SELECT s.*,
               CASE WHEN s.missed AND NOT s.early AND s.misfire <> 'skip' THEN (
                   SELECT count(*) FROM (
                       (SELECT 1 FROM executions o
                        WHERE o.partition = s.partition AND o.status = 'pending'
                          AND o.fire_at > s.fire_at AND o.fire_at <= statement_timestamp()
                          AND o.job_id = s.job_id AND o.trigger = 'schedule'
                          AND o.scheduled_for + interval '0' > s.scheduled_for)
                       UNION ALL
                       (SELECT 1 FROM executions o
                        WHERE o.job_id = s.job_id AND o.status IN ('dispatched', 'running')
                          AND o.trigger = 'schedule'
                          AND o.scheduled_for + interval '0' > s.scheduled_for
                          AND o.scheduled_for + interval '0' <= statement_timestamp())
                       LIMIT CASE WHEN s.misfire = 'fire_once' THEN 1
                                  ELSE s.misfire_replay_cap END
                   ) later)
               END AS later_due
        FROM seen s
    ), busy AS (
        -- An overlap-limited job's run in flight now (read in this statement): the
        -- earliest handed over. Jobs that allow overlap are not looked at.
        -- `misfires`: the misfire policy skips it (its reason then is the misfire's; a
        -- missed run the policy lets fire may still be skipped as an overlap, and its
        -- reason then names the run in flight).
        SELECT l.*,
               l.missed AND (l.misfire = 'skip'
                             OR (l.misfire = 'fire_once' AND l.later_due >= 1)
                             OR (l.misfire = 'fire_all' AND l.later_due >= l.misfire_replay_cap))
                   AS misfires,
               b.scheduled_for AS busy_at, b.status AS busy_status,
               b.dispatched_at AS busy_dispatched_at, b.started_at AS busy_started_at,
               b.fire_at AS busy_fire_at, b.executor_id AS busy_executor
        FROM looked l
        LEFT JOIN LATERAL (
            SELECT o.scheduled_for, o.status, o.dispatched_at, o.started_at, o.fire_at,
                   o.executor_id
            FROM executions o
            WHERE l.overlap <> 'allow' AND NOT l.early
              AND o.job_id = l.job_id AND o.status IN ('dispatched', 'running')
            ORDER BY o.dispatched_at
            LIMIT 1
        ) b ON true
    ), picked AS (
        SELECT b.job_id, b.scheduled_for, b.fire_at, b.tenant_id, b.executor_id, b.instance,
               b.ord, b.concurrency_key, b.concurrency_limit,
               CASE
                   WHEN b.early THEN 'early'
                   WHEN b.misfires THEN 'misfired'
                   WHEN b.busy_at IS NULL THEN 'claimed'
                   WHEN b.overlap = 'skip' AND b.trigger = 'schedule' AND b.attempt = 0
                        AND b.busy_dispatched_at <= b.fire_at
                        AND b.busy_fire_at <= (SELECT o.decided_at FROM owned o)
                       THEN 'skipped'
                   ELSE 'blocked'
               END AS state,
               CASE
                   WHEN b.misfires THEN
                       'misfire: waited '
                       || wheel_readable(extract(epoch FROM (SELECT o.decided_at FROM owned o) - b.fire_at))
                       || CASE WHEN b.waited <> '' THEN ' ' || b.waited ELSE '' END
                       || CASE WHEN b.misfire_grace_ms = 0 THEN ', and its job allows no grace'
                               ELSE ', past its ' || wheel_readable(b.misfire_grace_ms / 1000.0)
                                    || ' grace' END
                       || CASE b.misfire
                              WHEN 'skip' THEN ' (policy skip)'
                              WHEN 'fire_once' THEN '; a later run fires instead (policy fire_once)'
                              ELSE '; the latest ' || b.misfire_replay_cap
                                   || ' fire instead, the replay cap (policy fire_all)'
                          END
                   WHEN b.busy_at IS NULL THEN NULL
                   WHEN b.busy_status = 'running' THEN
                       'overlap: run ' || wheel_execution_id(b.job_id, b.busy_at)
                       || ' was still running (started '
                       || wheel_readable(extract(epoch FROM (SELECT o.decided_at FROM owned o)
                                                 - coalesce(b.busy_started_at, b.busy_fire_at)))
                       || ' before, on ' || coalesce(b.busy_executor, 'an executor')
                       || ') (policy skip)'
                   ELSE
                       'overlap: run ' || wheel_execution_id(b.job_id, b.busy_at)
                       || ' was in flight (handed to ' || coalesce(b.busy_executor, 'an executor')
                       || ' '
                       || wheel_readable(extract(epoch FROM (SELECT o.decided_at FROM owned o)
                                                 - b.busy_dispatched_at))
                       || ' before, due '
                       || wheel_readable(extract(epoch FROM (SELECT o.decided_at FROM owned o) - b.busy_fire_at))
                       || ' before, no result yet) (policy skip)'
               END AS reason
        FROM busy b
    ), keyed AS (
        -- Runs with a concurrency key, and only they: the n-th each would be of its
        -- tenant's key in this claim, in the caller's order.
        SELECT p.job_id, p.scheduled_for, p.fire_at, p.tenant_id, p.executor_id, p.instance,
               p.ord, p.concurrency_key, p.concurrency_limit, p.state, p.reason,
               row_number() OVER (PARTITION BY p.tenant_id, p.concurrency_key ORDER BY p.ord)
                   AS key_nth
        FROM picked p
        WHERE p.concurrency_key IS NOT NULL AND p.state = 'claimed'
    ), gated AS (
        -- A key's limit holds across the cluster, and for runs claimed ahead of their
        -- instant too: the keyed runs beyond their key's room (their job's limit less
        -- the key's runs in flight, read unlocked like the tenant's room: the caller's
        -- wheel_count_keys refuses an overshoot) are left 'at_key_limit'.
        SELECT p.job_id, p.scheduled_for, p.fire_at, p.tenant_id, p.executor_id, p.instance,
               p.ord, p.state, p.reason, NULL::text AS concurrency_key, NULL::integer AS key_room
        FROM picked p
        WHERE p.concurrency_key IS NULL OR p.state <> 'claimed'
        UNION ALL
        SELECT k.job_id, k.scheduled_for, k.fire_at, k.tenant_id, k.executor_id, k.instance,
               k.ord,
               CASE WHEN k.key_nth > k.concurrency_limit - coalesce((
                        SELECT c.in_flight FROM concurrency_keys c
                        WHERE c.tenant_id = k.tenant_id AND c.key = k.concurrency_key), 0)
                    THEN 'at_key_limit' ELSE k.state END,
               k.reason, k.concurrency_key, (k.concurrency_limit - k.key_nth)::integer
        FROM keyed k
    ), ranked AS (
        -- The n-th run due now each tenant would get, in the caller's order.
        SELECT p.*,
               row_number() OVER (
                   PARTITION BY p.tenant_id, p.state = 'claimed',
                                p.fire_at <= (SELECT o.decided_at FROM owned o) + interval '1 second'
                   ORDER BY p.ord) AS nth
        FROM gated p
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
        SELECT r.job_id, r.scheduled_for, r.fire_at, r.executor_id, r.instance, r.reason,
               r.concurrency_key, r.key_room,
               CASE WHEN r.state = 'claimed'
                         -- The cap holds back runs due now; one handed over ahead of its
                         -- instant goes (a planned spike starts on time) and counts.
                         AND r.fire_at <= (SELECT o.decided_at FROM owned o) + interval '1 second'
                         AND r.nth > coalesce((SELECT m.free FROM room m WHERE m.id = r.tenant_id), 0)
                    THEN 'capped' ELSE r.state END AS state
        FROM ranked r
    ), claimed AS (
        UPDATE executions e
        SET status = 'dispatched',
            fence = e.fence + 1,
            attempt = e.attempt + 1,
            -- A run handed over ahead of its instant keeps a whole lease past it.
            lease_until = greatest((SELECT o.decided_at FROM owned o), e.fire_at) + make_interval(secs => p_lease_s),
            dispatched_at = (SELECT o.decided_at FROM owned o),
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
                  e.lease_until, e.job_version, e.priority, e.fire_at, e.concurrency_key,
                  p.key_room
    ), skipped AS (
        UPDATE executions e
        SET status = 'skipped',
            reason = p.reason,
            finished_at = (SELECT o.decided_at FROM owned o)
        FROM decided p
        WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for
          AND e.scheduled_for BETWEEN p_first AND p_last
          AND p.state IN ('skipped', 'misfired')
        RETURNING e.job_id, e.scheduled_for, e.fire_at, p.state
    )
    SELECT 'claimed', c.job_id, c.scheduled_for, c.tenant_id, c.partition, c.fence, c.attempt,
           c.lease_until, c.job_version, j.task_type, j.payload, j.pool, c.priority,
           j.timeout_ms, c.fire_at, j.http_url, j.http_retry_client_errors, c.concurrency_key,
           c.key_room
    FROM claimed c
    CROSS JOIN LATERAL (
        SELECT j.task_type, j.payload, j.pool, j.timeout_ms, j.http_url, j.http_retry_client_errors
        FROM jobs j WHERE j.id = c.job_id LIMIT 1
    ) j
    UNION ALL
    SELECT s.state, s.job_id, s.scheduled_for, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, s.fire_at, NULL, NULL, NULL, NULL
    FROM skipped s
    UNION ALL
    SELECT p.state, p.job_id, p.scheduled_for, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, p.fire_at, NULL, NULL, NULL, NULL
    FROM decided p
    WHERE p.state IN ('blocked', 'early', 'capped', 'at_key_limit')
$$;
