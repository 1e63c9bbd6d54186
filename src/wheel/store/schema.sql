-- wheel's current schema, whole: what replaying every migration in
-- migrations/ produces (tests/integration/store/test_migrations.py proves it).
-- Read this to know the schema; change it only together with a new migration.
--
-- Postgres is the source of truth: jobs (definitions), executions (one row
-- per occurrence, keyed by (job_id, scheduled_for), the idempotency key),
-- attempts (every attempt kept), tenants and their hashed API tokens, and the
-- partition epochs that fence scheduler nodes. executions and attempts are
-- range-partitioned by day of scheduled_for (partitions are created by
-- wheel.store.time_partitions), so retention is a partition drop.

CREATE TYPE wheel_execution_status AS ENUM (
    'pending', 'dispatched', 'running',
    'succeeded', 'dead', 'skipped', 'needs_review', 'cancelled'
);

-- 'rejected': a failure that is not retried (an HTTP task's endpoint answered 4xx).
CREATE TYPE wheel_outcome AS ENUM ('succeeded', 'failed', 'not_started', 'lease_expired',
                                   'rejected');

CREATE TABLE tenants (
    id              uuid PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (name <> ''),
    max_in_flight   integer NOT NULL DEFAULT 1000 CHECK (max_in_flight > 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- Its runs dispatched or running now, across the cluster: claims stop at
    -- max_in_flight (see wheel_claim); every recorded attempt lowers it
    -- (wheel_count_in_flight, in the claim's or the record's statement).
    in_flight       integer NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
    -- Its webhook (wheel.notify): where notifications go, for which statuses, and
    -- the secret that signs them (made here, rotated through the API).
    notify_url      text,
    notify_on       wheel_execution_status[] NOT NULL DEFAULT '{dead,needs_review}'
                    CHECK (notify_on <@ '{dead,needs_review,skipped}'::wheel_execution_status[]),
    notify_secret   text NOT NULL
                    DEFAULT 'whsec_' || replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
    notify_secret_rotated_at timestamptz,
    -- For a day after a rotation notifications carry a signature by this one too.
    notify_secret_previous text,
    -- The hosts its HTTP tasks may POST to ('{}': any the nodes' egress allows), set by
    -- an operator, never by the tenant (wheel.model.http_tasks.host_allowed).
    http_hosts      text[] NOT NULL DEFAULT '{}'
);

-- Tokens are 256-bit random secrets; only their SHA-256 is stored. A tenant's
-- token calls the public API as that tenant; an executor's (no tenant) opens
-- the executor stream.
CREATE TABLE api_tokens (
    id              uuid PRIMARY KEY,
    tenant_id       uuid REFERENCES tenants (id),
    name            text NOT NULL,
    token_sha256    bytea NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
    created_at      timestamptz NOT NULL DEFAULT now(),
    revoked_at      timestamptz,
    role            text NOT NULL DEFAULT 'tenant' CHECK (role IN ('tenant', 'executor')),
    -- An executor token's allowed executor ids (globs, e.g. 'wheel-executor-*').
    executor_ids    text[],
    CONSTRAINT api_tokens_role_tenant CHECK ((role = 'tenant') = (tenant_id IS NOT NULL)),
    CONSTRAINT api_tokens_executor_ids CHECK ((role = 'executor') = (executor_ids IS NOT NULL))
);
CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id);

CREATE TABLE jobs (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants (id),
    name                text NOT NULL,
    task_type           text NOT NULL,
    payload             bytea NOT NULL DEFAULT '',
    schedule_kind       text NOT NULL CHECK (schedule_kind IN ('now', 'at', 'cron', 'interval')),
    run_at              timestamptz,
    cron                text,
    time_zone           text NOT NULL DEFAULT 'UTC',
    starts_at           timestamptz,
    ends_at             timestamptz,
    smear_ms            bigint NOT NULL DEFAULT 0 CHECK (smear_ms >= 0),
    dst_gap             text NOT NULL DEFAULT 'default' CHECK (dst_gap IN ('default', 'shift', 'skip')),
    dst_fold            text NOT NULL DEFAULT 'default'
                        CHECK (dst_fold IN ('default', 'first', 'last', 'both')),
    max_attempts        integer NOT NULL CHECK (max_attempts >= 1),
    backoff_base_ms     bigint NOT NULL CHECK (backoff_base_ms >= 0),
    backoff_cap_ms      bigint NOT NULL CHECK (backoff_cap_ms >= backoff_base_ms),
    idempotent          boolean NOT NULL,
    misfire             text NOT NULL CHECK (misfire IN ('skip', 'fire_once', 'fire_all')),
    misfire_grace_ms    bigint NOT NULL CHECK (misfire_grace_ms >= 0),
    misfire_replay_cap  integer NOT NULL CHECK (misfire_replay_cap >= 1),
    overlap             text NOT NULL CHECK (overlap IN ('skip', 'queue', 'allow')),
    timeout_ms          bigint NOT NULL CHECK (timeout_ms > 0),
    priority            integer NOT NULL DEFAULT 0,
    pool                text NOT NULL DEFAULT 'default' CHECK (pool <> ''),
    status              text NOT NULL DEFAULT 'active'
                        CHECK (status IN ('active', 'paused', 'deleted')),
    version             bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
    partition           integer NOT NULL CHECK (partition >= 0),
    -- The materialiser's cursor: occurrences exist up to here, made from this version.
    materialised_to     timestamptz,
    materialised_version bigint NOT NULL DEFAULT 0,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- '' sends this job's notifications to its tenant's webhook.
    notify_url          text NOT NULL DEFAULT '',
    -- An HTTP task (wheel.model.http_tasks): the nodes POST its runs here ('' for the
    -- tasks executors run); 4xx answers are retried only with the flag.
    http_url            text NOT NULL DEFAULT '',
    http_retry_client_errors boolean NOT NULL DEFAULT false,
    -- A paused job's note, who paused it (the API token's name) and when; '', '' and
    -- NULL while it is not paused (resuming clears them).
    pause_note          text NOT NULL DEFAULT '',
    paused_by           text NOT NULL DEFAULT '',
    paused_at           timestamptz,
    -- An interval schedule (wheel.schedule.interval): a run every every_ms, on the grid
    -- anchor + k * every (NULL: the Unix epoch), counted in real time ('elapsed') or on
    -- the wall clock of time_zone ('wall').
    every_ms            bigint CHECK (every_ms BETWEEN 1000 AND 31622400000),
    anchor              timestamptz,
    interval_dst        text NOT NULL DEFAULT 'elapsed' CHECK (interval_dst IN ('elapsed', 'wall')),
    -- Each scheduled run must have succeeded this long after its instant (NULL: no
    -- deadline); told after this many runs in a row ended dead or needing review (0:
    -- never); the first run of the failure streak it was told of (NULL: none open).
    deadline_ms         bigint CHECK (deadline_ms BETWEEN 1000 AND 31622400000),
    notify_after_failures integer NOT NULL DEFAULT 0
                        CHECK (notify_after_failures BETWEEN 0 AND 1000),
    failing_since       timestamptz,
    -- A concurrency key (wheel.model.concurrency): at most concurrency_limit of the
    -- tenant's runs with the same key are in flight, whatever their job. The key is
    -- concurrency_key, or the payload's top-level field concurrency_key_field ('' and 0:
    -- no key); each run holds the key it was made with (executions.concurrency_key).
    concurrency_key     text NOT NULL DEFAULT '',
    concurrency_key_field text NOT NULL DEFAULT '',
    concurrency_limit   integer NOT NULL DEFAULT 0 CHECK (concurrency_limit >= 0),
    -- Business calendars (wheel.schedule.business_days): the tenant's calendars it names,
    -- and what a run on a day they close does (skipped, or moved to an open day).
    calendars           text[] NOT NULL DEFAULT '{}',
    calendar_policy     text NOT NULL DEFAULT 'skip'
                        CHECK (calendar_policy IN ('skip', 'next_business_day', 'previous_business_day')),
    CHECK ((schedule_kind = 'at') = (run_at IS NOT NULL)),
    CHECK ((schedule_kind = 'cron') = (cron IS NOT NULL)),
    CONSTRAINT jobs_interval_every CHECK ((schedule_kind = 'interval') = (every_ms IS NOT NULL))
);
CREATE INDEX jobs_tenant_newest ON jobs (tenant_id, created_at DESC, id DESC);
-- A name is unique among a tenant's jobs that are not deleted: jobs are addressed by it.
CREATE UNIQUE INDEX jobs_tenant_name ON jobs (tenant_id, name) WHERE status <> 'deleted';
-- The materialiser's path: active recurring (cron and interval) jobs of a partition,
-- least materialised first.
CREATE INDEX jobs_to_materialise ON jobs (partition, materialised_to NULLS FIRST)
    WHERE status = 'active' AND schedule_kind IN ('cron', 'interval');
-- The jobs naming a calendar: re-planned when it is edited, and why it cannot be deleted.
CREATE INDEX jobs_calendars ON jobs USING gin (calendars) WHERE calendars <> '{}';

-- One day per statement. A statement that locks or updates executions by key
-- names the batch's first and last instant (`scheduled_for BETWEEN p_first AND
-- p_last`) and is planned with those values (plan_cache_mode force_custom_plan
-- in the functions; the store sends the plain queries unprepared), and the
-- stores send one UTC day's keys per statement (wheel.store.days): the planner
-- then prunes to the one day partition and leaves no Append, so nothing is
-- pruned per row at run time. Postgres 18 shares a plan's run-time pruning state
-- with an EvalPlanQual recheck, which rebuilds it in memory freed when the
-- recheck ends: a row another transaction updated meanwhile (SKIP LOCKED claims
-- racing, a result racing a heartbeat or the reaper) then crashed the backend
-- (signal 11 in perform_pruning_base_step), and with it every session of the
-- server, or pruned with stale values and refused a valid result as stale.
-- scripts/pg_claim_crash.py reproduces it; tests/integration/store/test_rechecks.py
-- makes the rechecks happen.
CREATE TABLE executions (
    job_id          uuid NOT NULL,
    scheduled_for   timestamptz NOT NULL,
    tenant_id       uuid NOT NULL,
    partition       integer NOT NULL,
    job_version     bigint NOT NULL,
    status          wheel_execution_status NOT NULL DEFAULT 'pending',
    -- When it should fire: scheduled_for + smear, or a retry's backoff instant.
    fire_at         timestamptz NOT NULL,
    -- Dispatches so far; the fence grows with every dispatch and never goes back.
    attempt         integer NOT NULL DEFAULT 0,
    fence           bigint NOT NULL DEFAULT 0,
    lease_until     timestamptz,
    executor_id     text,
    priority        integer NOT NULL DEFAULT 0,
    trigger         text NOT NULL DEFAULT 'schedule'
                    CHECK (trigger IN ('schedule', 'manual', 'backfill')),
    reason          text,
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    dispatched_at   timestamptz,
    started_at      timestamptz,
    finished_at     timestamptz,
    -- The node that made the latest claim (what `explain` shows).
    claimed_by      text,
    -- The executor process the latest claim went to (its Hello's instance id,
    -- never shown): its reports are the only ones accepted.
    executor_instance text,
    -- When it last became pending (made, retried, given back): the catch-up scan
    -- reads what became pending since its last pass, not the whole backlog.
    pending_since   timestamptz NOT NULL DEFAULT now(),
    -- A person's retries, oldest first: {"at", "by" (the API token's name),
    -- "after_attempt"}. Each starts a new try with the job's max_attempts.
    retries         jsonb NOT NULL DEFAULT '[]',
    -- Its deadline (scheduled runs of jobs with one only, stamped when made; NULL
    -- otherwise), and when its partition's owner marked it missed (wheel_mark_deadlines).
    deadline_at     timestamptz,
    deadline_missed_at timestamptz,
    -- Its job's concurrency key, resolved when the run was made (re-resolved while it is
    -- pending when the job is edited); NULL for a job without one. Claims hold it to the
    -- limit (concurrency_keys).
    concurrency_key text,
    PRIMARY KEY (job_id, scheduled_for),
    CHECK ((status IN ('dispatched', 'running')) = (lease_until IS NOT NULL))
) PARTITION BY RANGE (scheduled_for);
-- The loader's path: a partition's pending occurrences by firing instant.
CREATE INDEX executions_due ON executions (partition, fire_at) WHERE status = 'pending';
-- Retention's check that a day holds no work waiting for a person.
CREATE INDEX executions_needs_review ON executions (partition) WHERE status = 'needs_review';
-- The reaper's path: a partition's leases by expiry. Its predicate names lease_until
-- (set exactly while a run is dispatched or running: the CHECK above), and the reaper
-- says `lease_until <`, never the statuses; the probes of a job's runs in flight say
-- the statuses, never lease_until. So each of the two partial indexes of leased runs
-- answers only its own queries: when both looked empty (statistics taken while every
-- run of the day was pending, a spike registered ahead), the planner took the other
-- one whole, filtered, and each probe walked every run in flight that day.
CREATE INDEX executions_leases ON executions (partition, lease_until)
    WHERE lease_until IS NOT NULL;
-- A tenant's executions, newest first (a job's: the primary key, scanned backwards).
CREATE INDEX executions_tenant_newest ON executions (tenant_id, scheduled_for DESC, job_id DESC);
-- The catch-up's path: what became pending since its last pass (recent: a short
-- range). `IS NOT NULL` (always true) keeps it to queries naming pending_since: a
-- load that may only walk the due index in order cannot pick this one instead.
CREATE INDEX executions_pending_since ON executions (pending_since)
    WHERE status = 'pending' AND pending_since IS NOT NULL;
-- A job's running executions: probed by claims of jobs whose overlap is not 'allow'
-- (and the queue's skip, the in-flight lookup); see executions_leases.
CREATE INDEX executions_leased_by_job ON executions (job_id)
    WHERE status IN ('dispatched', 'running');
-- The runs holding a concurrency key now (what explain and the lists name); runs
-- without a key have no entry.
CREATE INDEX executions_keyed_in_flight ON executions (tenant_id, concurrency_key)
    WHERE concurrency_key IS NOT NULL AND status IN ('dispatched', 'running');

CREATE TABLE attempts (
    job_id          uuid NOT NULL,
    scheduled_for   timestamptz NOT NULL,
    number          integer NOT NULL,
    fence           bigint NOT NULL,
    executor_id     text,
    started_at      timestamptz,
    finished_at     timestamptz NOT NULL,
    outcome         wheel_outcome NOT NULL,
    error           text,
    PRIMARY KEY (job_id, scheduled_for, fence)
) PARTITION BY RANGE (scheduled_for);

-- The fencing token of scheduler ownership: a partition's etcd create revision.
CREATE TABLE partition_epochs (
    partition       integer PRIMARY KEY CHECK (partition >= 0),
    epoch           bigint NOT NULL,
    node_id         text NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

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

-- A tenant's runs in flight move by these deltas (claimed: +, recorded: -), as
-- the last step of the statement that moved the runs (the claim query, and
-- wheel_record_attempts for results and the reaper): the tenants' rows are locked in id order (concurrent callers never
-- deadlock) and held only for the commit. True when a tenant that gained runs
-- is now over its cap: a claim that read its room before a concurrent one
-- committed overshot. With p_refuse_overshoot that raises SQLSTATE WH001, which
-- rolls the whole claim back (the caller claims again with the rows locked
-- first). p_tenant_ids are distinct.
CREATE FUNCTION wheel_count_in_flight(
    p_tenant_ids uuid[], p_deltas integer[], p_refuse_overshoot boolean
) RETURNS boolean LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    over boolean;
BEGIN
    PERFORM 1 FROM tenants t WHERE t.id = ANY(p_tenant_ids) ORDER BY t.id FOR UPDATE OF t;
    WITH changed AS (
        UPDATE tenants t
        SET in_flight = greatest(t.in_flight + d.n, 0)
        FROM unnest(p_tenant_ids, p_deltas) AS d (id, n)
        WHERE t.id = d.id
        RETURNING d.n > 0 AND t.in_flight > t.max_in_flight AS over
    )
    SELECT coalesce(bool_or(c.over), false) INTO over FROM changed c;
    IF over AND p_refuse_overshoot THEN
        RAISE EXCEPTION 'a claim went over a tenant''s in-flight cap' USING ERRCODE = 'WH001';
    END IF;
    RETURN over;
END
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
CREATE FUNCTION wheel_record_attempts(
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

-- How a pending run waits for its job's other runs, as the loader routes it: a
-- manual or backfilled run, or a retry, is never skipped by the overlap policy
-- ('wait'); a one-off's (now, at) scheduled run has no other run to overlap ('allow': it
-- may be claimed ahead); otherwise the job's policy. (Inlined by the planner.)
CREATE FUNCTION wheel_run_overlap(
    p_trigger text, p_attempt integer, p_overlap text, p_schedule_kind text
) RETURNS text LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN (p_trigger <> 'schedule' OR p_attempt > 0) AND p_overlap <> 'allow'
                THEN 'wait'
                WHEN p_schedule_kind IN ('now', 'at') THEN 'allow'
                ELSE p_overlap END
$$;

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
           e.tenant_id, j.pool, j.task_type,
           wheel_run_overlap(e.trigger, e.attempt, j.overlap, j.schedule_kind)
    FROM executions e
    CROSS JOIN LATERAL (
        SELECT j.pool, j.task_type, j.overlap, j.schedule_kind
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

-- A duration as people read it in a reason ("840 ms", "25.7 s", "1 min 17 s", "2 h 5 min"):
-- wheel.durations.readable, for the positive values reasons need.
CREATE FUNCTION wheel_readable(p_s float8) RETURNS text LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE
        WHEN p_s < 0.01 THEN to_char(p_s * 1000, 'FM990.0') || ' ms'
        WHEN p_s < 1 THEN round(p_s * 1000)::bigint || ' ms'
        WHEN p_s < 59.95 THEN to_char(p_s, 'FM990.0') || ' s'
        WHEN round(p_s) < 3600 THEN
            (round(p_s)::bigint / 60) || ' min'
            || CASE WHEN round(p_s)::bigint % 60 > 0
                    THEN ' ' || round(p_s)::bigint % 60 || ' s' ELSE '' END
        WHEN round(p_s) < 86400 THEN
            (round(p_s)::bigint / 3600) || ' h'
            || CASE WHEN round(p_s)::bigint % 3600 / 60 > 0
                    THEN ' ' || round(p_s)::bigint % 3600 / 60 || ' min' ELSE '' END
        ELSE
            (round(p_s)::bigint / 86400) || ' d'
            || CASE WHEN round(p_s)::bigint % 86400 / 3600 > 0
                    THEN ' ' || round(p_s)::bigint % 86400 / 3600 || ' h' ELSE '' END
    END
$$;

-- An execution's id as the API spells it (wheel.model.ids.ExecutionKey.id).
CREATE FUNCTION wheel_execution_id(p_job_id uuid, p_scheduled_for timestamptz)
RETURNS text LANGUAGE sql IMMUTABLE
AS $$
    SELECT p_job_id::text || '@'
           || to_char(p_scheduled_for AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISS.US"Z"')
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
-- paused or deleted job, of a recurring job edited since they were made (the
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

-- The misfire rule for occurrences that came due while nobody fired them (a
-- node took the partition over late, the cluster was down, the job was
-- paused): a job's scheduled, never-dispatched pending occurrence is missed
-- when it is overdue by more than its grace, or overdue with a later one
-- overdue too; of the missed, `skip` records them all skipped, `fire_once`
-- keeps the latest overdue and skips the rest, `fire_all` keeps the latest
-- `misfire_replay_cap`. Retries and manual triggers always stay. The reason says
-- how long before it was loaded the run came due, whether that is past its grace,
-- and the rule (the claim's words for runs that waited once loaded: wheel_claim).
-- Epoch-fenced like a claim. Returns how many it skipped.
CREATE FUNCTION wheel_apply_misfire(p_partitions integer[], p_epochs bigint[])
RETURNS bigint LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_custom_plan  -- the overdue days only: see executions
AS $$
DECLARE
    v_first timestamptz;
    v_last timestamptz;
    v_skipped bigint;
BEGIN
    -- The overdue runs' first and last instant: the days the update may touch.
    SELECT min(e.scheduled_for), max(e.scheduled_for) INTO v_first, v_last
    FROM executions e
    WHERE e.partition = ANY(p_partitions)
      AND e.status = 'pending'
      AND e.fire_at < clock_timestamp()
      AND e.attempt = 0
      AND e.trigger = 'schedule';
    IF v_first IS NULL THEN
        RETURN 0;
    END IF;
    WITH owned AS (
        SELECT pe.partition
        FROM partition_epochs pe
        JOIN unnest(p_partitions, p_epochs) AS mine (partition, epoch)
          ON pe.partition = mine.partition AND pe.epoch = mine.epoch
        FOR SHARE OF pe
    ), overdue AS (
        SELECT e.job_id, e.scheduled_for, e.fire_at, j.misfire, j.misfire_replay_cap,
               j.misfire_grace_ms,
               row_number() OVER (PARTITION BY e.job_id ORDER BY e.scheduled_for DESC) AS newest
        FROM executions e
        JOIN jobs j ON j.id = e.job_id
        WHERE e.partition IN (SELECT partition FROM owned)
          AND e.status = 'pending'
          AND e.fire_at < clock_timestamp()
          AND e.attempt = 0
          AND e.trigger = 'schedule'
          AND j.status = 'active'
    ), missed AS (
        -- Missed: overdue by more than the grace, or overdue with a later run of the
        -- job overdue too (it came due while nobody fired, and firing both would be a
        -- replay). The newest overdue run within the grace is only late: it fires.
        SELECT o.*
        FROM overdue o
        JOIN jobs j ON j.id = o.job_id
        WHERE o.newest > 1
           OR o.fire_at < clock_timestamp() - make_interval(secs => j.misfire_grace_ms / 1000.0)
    ), skipped AS (
        UPDATE executions e
        SET status = 'skipped',
            finished_at = clock_timestamp(),
            reason = 'misfire: came due '
                || wheel_readable(extract(epoch FROM clock_timestamp() - o.fire_at))
                || ' before a scheduler loaded it'
                || CASE WHEN o.fire_at + make_interval(secs => o.misfire_grace_ms / 1000.0)
                             < clock_timestamp()
                        THEN ', past its ' || wheel_readable(o.misfire_grace_ms / 1000.0) || ' grace'
                        ELSE '' END
                || CASE o.misfire
                       WHEN 'skip' THEN ' (policy skip)'
                       WHEN 'fire_once' THEN '; a later run fires instead (policy fire_once)'
                       ELSE '; the latest ' || o.misfire_replay_cap
                            || ' fire instead, the replay cap (policy fire_all)'
                   END
        FROM missed o
        WHERE e.job_id = o.job_id AND e.scheduled_for = o.scheduled_for
          AND e.scheduled_for BETWEEN v_first AND v_last
          AND e.status = 'pending'
          AND (o.misfire = 'skip'
               OR (o.misfire = 'fire_once' AND o.newest > 1)
               OR (o.misfire = 'fire_all' AND o.newest > o.misfire_replay_cap))
        RETURNING 1
    )
    SELECT count(*) INTO v_skipped FROM skipped;
    RETURN v_skipped;
END
$$;

-- Occurrences due soon reach their owner at once: each insert statement
-- notifies 'wheel_due' with the partitions it added pending rows to (fire_at
-- within 15 minutes) and the earliest fire_at of each. The owner loads those
-- rows (only those: created in this transaction); a periodic scan is the
-- safety net.
CREATE FUNCTION wheel_notify_due() RETURNS trigger LANGUAGE plpgsql
AS $$
DECLARE
    payload text;
BEGIN
    -- "<this transaction's start, epoch ms>|<partition>:<earliest ms>,...": the rows
    -- were created at that start (their created_at), so the owner reads only those.
    SELECT floor(extract(epoch FROM now()) * 1000)::bigint || '|'
           || string_agg(d.partition || ':' || d.earliest_ms, ',')
    INTO payload
    FROM (
        SELECT n.partition,
               floor(extract(epoch FROM min(n.fire_at)) * 1000)::bigint AS earliest_ms
        FROM inserted n
        WHERE n.status = 'pending' AND n.fire_at < now() + interval '15 minutes'
        GROUP BY n.partition
    ) d;
    IF payload IS NOT NULL THEN
        -- A notification carries at most 8000 bytes; '*' asks owners to rescan.
        PERFORM pg_notify('wheel_due', CASE WHEN length(payload) > 7900 THEN '*' ELSE payload END);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER executions_notify_due
    AFTER INSERT ON executions
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION wheel_notify_due();

-- Notifications of runs that need a person (wheel.notify), written by a trigger in
-- the statement that gives a run its status, so none is lost; nodes send what is
-- due and record each try (`tries` fences the result, `next_at` is also the lease).
CREATE TABLE notifications (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id           uuid NOT NULL REFERENCES tenants (id),
    job_id              uuid NOT NULL,
    scheduled_for       timestamptz NOT NULL,
    -- What the run was when the notification was made (it may move on since).
    status              wheel_execution_status NOT NULL,
    reason              text,
    attempt             integer NOT NULL,
    error               text,
    url                 text NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- The next try is due then; a claimed row's lease ends then.
    next_at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    tries               integer NOT NULL DEFAULT 0 CHECK (tries >= 0),
    claimed_by          text,
    delivered_at        timestamptz,
    gave_up_at          timestamptz,
    last_error          text,
    last_status_code    integer,
    -- NULL: it announces the run's status (the trigger's). Otherwise the event: a missed
    -- deadline (with the deadline), or a job's failure streak or its recovery (with the
    -- streak's length and its first run's instant; the run is the streak's latest, or
    -- the success that ended it).
    event               text CHECK (event IN ('deadline_missed', 'failing', 'recovered')),
    deadline_at         timestamptz,
    streak              integer,
    streak_from         timestamptz,
    CHECK (delivered_at IS NULL OR gave_up_at IS NULL)
);
-- The senders' path: what is due, soonest first.
CREATE INDEX notifications_due ON notifications (next_at)
    WHERE delivered_at IS NULL AND gave_up_at IS NULL;
-- Explain's path: the notifications of one run.
CREATE INDEX notifications_of_run ON notifications (job_id, scheduled_for);
-- Retention's path.
CREATE INDEX notifications_created ON notifications (created_at);

-- Its plan is cached: the claim and record functions plan their own statements afresh
-- (plan_cache_mode force_custom_plan), which this trigger would otherwise inherit per row.
CREATE FUNCTION wheel_notify_run() RETURNS trigger LANGUAGE plpgsql
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

CREATE TRIGGER executions_notify_insert AFTER INSERT ON executions
    FOR EACH ROW WHEN (NEW.status IN ('dead', 'needs_review', 'skipped'))
    EXECUTE FUNCTION wheel_notify_run();
CREATE TRIGGER executions_notify_update AFTER UPDATE OF status ON executions
    FOR EACH ROW WHEN (NEW.status IN ('dead', 'needs_review', 'skipped')
                       AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION wheel_notify_run();

-- Deadlines and failure streaks (wheel.notify.deadlines).
-- The jobs a streak sweep reads: those that ask, or still have a streak to close.
CREATE INDEX jobs_watch_failures ON jobs (partition)
    WHERE notify_after_failures > 0 OR failing_since IS NOT NULL;

-- The deadline sweep's path: runs that can still miss their deadline (with one, not
-- marked, neither skipped nor cancelled, not succeeded in time).
CREATE INDEX executions_deadlines ON executions (partition, deadline_at)
    WHERE deadline_at IS NOT NULL AND deadline_missed_at IS NULL
      AND status NOT IN ('skipped', 'cancelled')
      AND (status <> 'succeeded' OR finished_at > deadline_at);

-- Mark the runs of owned partitions whose deadline passed without a success, one UTC
-- day per statement (see executions), each marked once and its notification written in
-- the same statement. Epoch-fenced like a claim. Returns how many it marked.
CREATE FUNCTION wheel_mark_deadlines(p_partitions integer[], p_epochs bigint[])
RETURNS bigint LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_custom_plan  -- one day partition, no run-time pruning: see executions
AS $$
DECLARE
    v_day timestamptz;
    v_first timestamptz;
    v_last timestamptz;
    v_marked bigint := 0;
    v_count bigint;
BEGIN
    FOR v_day IN
        SELECT DISTINCT date_trunc('day', e.scheduled_for, 'UTC')
        FROM executions e
        WHERE e.partition = ANY(p_partitions)
          AND e.deadline_at < clock_timestamp()
          AND e.deadline_at IS NOT NULL AND e.deadline_missed_at IS NULL
          AND e.status NOT IN ('skipped', 'cancelled')
          AND (e.status <> 'succeeded' OR e.finished_at > e.deadline_at)
        ORDER BY 1
    LOOP
        v_first := v_day;
        v_last := v_day + interval '1 day' - interval '1 microsecond';
        WITH owned AS (
            SELECT pe.partition
            FROM partition_epochs pe
            JOIN unnest(p_partitions, p_epochs) AS mine (partition, epoch)
              ON pe.partition = mine.partition AND pe.epoch = mine.epoch
            FOR SHARE OF pe
        ), marked AS (
            UPDATE executions e
            SET deadline_missed_at = clock_timestamp()
            WHERE e.partition IN (SELECT o.partition FROM owned o)
              AND e.scheduled_for BETWEEN v_first AND v_last
              AND e.deadline_at < clock_timestamp()
              AND e.deadline_at IS NOT NULL AND e.deadline_missed_at IS NULL
              AND e.status NOT IN ('skipped', 'cancelled')
              AND (e.status <> 'succeeded' OR e.finished_at > e.deadline_at)
            RETURNING e.job_id, e.scheduled_for, e.tenant_id, e.status, e.reason, e.attempt,
                      e.retries, e.error, e.deadline_at
        ), told AS (
            INSERT INTO notifications (tenant_id, job_id, scheduled_for, status, reason, attempt,
                                       error, url, event, deadline_at)
            SELECT m.tenant_id, m.job_id, m.scheduled_for, m.status, m.reason,
                   m.attempt - coalesce((m.retries -> -1 ->> 'after_attempt')::integer, 0),
                   left(m.error, 4000), coalesce(nullif(j.notify_url, ''), t.notify_url),
                   'deadline_missed', m.deadline_at
            FROM marked m
            JOIN jobs j ON j.id = m.job_id
            JOIN tenants t ON t.id = j.tenant_id
            WHERE coalesce(nullif(j.notify_url, ''), t.notify_url) IS NOT NULL
        )
        SELECT count(*) INTO v_count FROM marked;
        v_marked := v_marked + v_count;
    END LOOP;
    RETURN v_marked;
END
$$;

-- For the jobs of owned partitions that ask to be told of failure streaks: when a job's
-- latest `notify_after_failures` finished runs (dead, needs_review or succeeded, in
-- order of scheduled_for) all failed and no streak of it was announced, announce one
-- ('failing'); when a streak was announced and its latest finished run succeeded,
-- announce the recovery ('recovered'). Runs still pending or in flight count for
-- neither. It reads executions and locks only jobs rows (the announcement is a guarded
-- update of failing_since, so two passes never announce twice). Returns each
-- announcement (its notification is written only where the job has a webhook).
CREATE FUNCTION wheel_check_streaks(p_partitions integer[], p_epochs bigint[])
RETURNS TABLE (event text, job_id uuid, streak integer) LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    j record;
    v_latest record;
    v_failed integer;
    v_finished integer;
    v_first timestamptz;
    v_streak integer;
BEGIN
    FOR j IN
        SELECT jb.id, jb.tenant_id, jb.notify_after_failures AS n, jb.failing_since,
               coalesce(nullif(jb.notify_url, ''), t.notify_url) AS url
        FROM jobs jb
        JOIN tenants t ON t.id = jb.tenant_id
        JOIN partition_epochs pe ON pe.partition = jb.partition
        JOIN unnest(p_partitions, p_epochs) AS mine (partition, epoch)
          ON mine.partition = pe.partition AND mine.epoch = pe.epoch
        WHERE jb.partition = ANY(p_partitions)
          AND (jb.notify_after_failures > 0 OR jb.failing_since IS NOT NULL)
          AND jb.status <> 'deleted'
    LOOP
        SELECT x.scheduled_for, x.status, x.reason, x.attempt, x.retries, x.error
        INTO v_latest
        FROM executions x
        WHERE x.job_id = j.id AND x.status IN ('succeeded', 'dead', 'needs_review')
        ORDER BY x.scheduled_for DESC
        LIMIT 1;
        CONTINUE WHEN NOT FOUND;
        IF j.failing_since IS NULL THEN
            CONTINUE WHEN j.n = 0 OR v_latest.status = 'succeeded';
            SELECT count(*) FILTER (WHERE r.status <> 'succeeded'), count(*), min(r.scheduled_for)
            INTO v_failed, v_finished, v_first
            FROM (
                SELECT x.status, x.scheduled_for
                FROM executions x
                WHERE x.job_id = j.id AND x.status IN ('succeeded', 'dead', 'needs_review')
                ORDER BY x.scheduled_for DESC
                LIMIT j.n
            ) r;
            CONTINUE WHEN v_finished < j.n OR v_failed < j.n;
            -- The whole streak: back to the success before it (at most 10000 runs back).
            SELECT count(*) FILTER (WHERE r.ok_after = 0), min(r.scheduled_for) FILTER (WHERE r.ok_after = 0)
            INTO v_streak, v_first
            FROM (
                SELECT s.scheduled_for,
                       count(*) FILTER (WHERE s.status = 'succeeded')
                           OVER (ORDER BY s.scheduled_for DESC) AS ok_after
                FROM (
                    SELECT x.status, x.scheduled_for
                    FROM executions x
                    WHERE x.job_id = j.id AND x.status IN ('succeeded', 'dead', 'needs_review')
                    ORDER BY x.scheduled_for DESC
                    LIMIT 10000
                ) s
            ) r;
            UPDATE jobs SET failing_since = v_first WHERE id = j.id AND failing_since IS NULL;
            CONTINUE WHEN NOT FOUND;
            event := 'failing';
        ELSE
            CONTINUE WHEN v_latest.status <> 'succeeded';
            SELECT count(*)::integer INTO v_streak
            FROM executions x
            WHERE x.job_id = j.id AND x.status IN ('dead', 'needs_review')
              AND x.scheduled_for >= j.failing_since AND x.scheduled_for < v_latest.scheduled_for;
            v_first := j.failing_since;
            UPDATE jobs SET failing_since = NULL
            WHERE id = j.id AND failing_since = j.failing_since;
            CONTINUE WHEN NOT FOUND;
            event := 'recovered';
        END IF;
        IF j.url IS NOT NULL THEN
            INSERT INTO notifications (tenant_id, job_id, scheduled_for, status, reason, attempt,
                                       error, url, event, streak, streak_from)
            VALUES (j.tenant_id, j.id, v_latest.scheduled_for, v_latest.status, v_latest.reason,
                    v_latest.attempt
                        - coalesce((v_latest.retries -> -1 ->> 'after_attempt')::integer, 0),
                    left(v_latest.error, 4000), j.url, event, v_streak, v_first);
        END IF;
        job_id := j.id;
        streak := v_streak;
        RETURN NEXT;
    END LOOP;
END
$$;
-- A tenant's named business calendars (wheel.schedule.calendars): the days each closes,
-- as listed dates and ranges, weekdays and public-holiday sources. Jobs name them by
-- name, so a name is unique per tenant; the version guards updates as a job's does.
CREATE TABLE calendars (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    name            text NOT NULL CHECK (name <> ''),
    description     text NOT NULL DEFAULT '',
    -- {"dates": ["2026-12-24..2027-01-02"], "weekdays": ["sat", "sun"], "holidays": ["GB-ENG"]}
    definition      jsonb NOT NULL,
    version         bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT calendars_tenant_name UNIQUE (tenant_id, name)
);
