-- Interval schedules: a run every so long (`--every 90m`), on the grid anchor + k * every
-- (no anchor: the Unix epoch's), counted in real time or on the zone's wall clock. They
-- are recurring jobs like cron ones: the materialiser makes their runs, the overlap
-- policy applies to them, and a run made from an older version waits for the
-- materialiser to carry it over or supersede it. Where the functions asked "is it not
-- cron?" to mean "is it a one-off?", they now ask that.

ALTER TABLE jobs
    ADD COLUMN every_ms bigint CHECK (every_ms BETWEEN 1000 AND 31622400000),
    ADD COLUMN anchor timestamptz,
    ADD COLUMN interval_dst text NOT NULL DEFAULT 'elapsed'
        CHECK (interval_dst IN ('elapsed', 'wall'));
ALTER TABLE jobs DROP CONSTRAINT jobs_schedule_kind_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_schedule_kind_check
    CHECK (schedule_kind IN ('now', 'at', 'cron', 'interval'));
ALTER TABLE jobs ADD CONSTRAINT jobs_interval_every
    CHECK ((schedule_kind = 'interval') = (every_ms IS NOT NULL));

DROP INDEX jobs_to_materialise;
CREATE INDEX jobs_to_materialise ON jobs (partition, materialised_to NULLS FIRST)
    WHERE status = 'active' AND schedule_kind IN ('cron', 'interval');

-- How a pending run waits for its job's other runs, as the loader routes it: a
-- manual or backfilled run, or a retry, is never skipped by the overlap policy
-- ('wait'); a one-off's (now, at) scheduled run has no other run to overlap ('allow': it
-- may be claimed ahead); otherwise the job's policy. (Inlined by the planner.)
CREATE OR REPLACE FUNCTION wheel_run_overlap(
    p_trigger text, p_attempt integer, p_overlap text, p_schedule_kind text
) RETURNS text LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN (p_trigger <> 'schedule' OR p_attempt > 0) AND p_overlap <> 'allow'
                THEN 'wait'
                WHEN p_schedule_kind IN ('now', 'at') THEN 'allow'
                ELSE p_overlap END
$$;

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
--              pending.
-- Each key costs one primary-key probe of its day partition, one of its job
-- and one update, whatever the number of partitions owned (a scan of the owned
-- array, not a join) or of day partitions (p_first and p_last, the keys' first
-- and last instant: callers pass one day's keys, planned as that one partition):
-- tests/integration/store/test_claim_plan.py counts the probes. A key of an
-- overlap-limited job adds a probe of the job's leased runs (an index per day
-- partition, holding only runs in flight); a missed one, a look at the job's
-- later runs. Neither compares scheduled_for itself, so neither prunes at run time.
-- Keys not returned at all are not pending, held by another claim, of a
-- paused or deleted job, of a recurring job edited since they were made (the
-- materialiser carries or supersedes them), or in a partition not ours.
CREATE OR REPLACE FUNCTION wheel_claim(
    p_partitions integer[], p_epochs bigint[], p_job_ids uuid[], p_scheduled_fors timestamptz[],
    p_executor_ids text[], p_instances text[], p_lease_s float8, p_ahead_s float8,
    p_first timestamptz, p_last timestamptz, p_waited text[] DEFAULT NULL
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
               j.misfire_grace_ms, j.misfire_replay_cap,
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
                   e.tenant_id, e.partition
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
                   j.misfire_grace_ms, j.misfire_replay_cap
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
               b.ord,
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
    ), ranked AS (
        -- The n-th run due now each tenant would get, in the caller's order.
        SELECT p.*,
               row_number() OVER (
                   PARTITION BY p.tenant_id, p.state = 'claimed',
                                p.fire_at <= (SELECT o.decided_at FROM owned o) + interval '1 second'
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
        SELECT r.job_id, r.scheduled_for, r.fire_at, r.executor_id, r.instance, r.reason,
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
                  e.lease_until, e.job_version, e.priority, e.fire_at
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
           j.timeout_ms, c.fire_at, j.http_url, j.http_retry_client_errors
    FROM claimed c
    CROSS JOIN LATERAL (
        SELECT j.task_type, j.payload, j.pool, j.timeout_ms, j.http_url, j.http_retry_client_errors
        FROM jobs j WHERE j.id = c.job_id LIMIT 1
    ) j
    UNION ALL
    SELECT s.state, s.job_id, s.scheduled_for, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, s.fire_at, NULL, NULL
    FROM skipped s
    UNION ALL
    SELECT p.state, p.job_id, p.scheduled_for, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, p.fire_at, NULL, NULL
    FROM decided p
    WHERE p.state IN ('blocked', 'early', 'capped')
$$;
