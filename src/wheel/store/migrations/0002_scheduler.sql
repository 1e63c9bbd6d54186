-- What a scheduler node needs beyond the store's first cut: overlap checks,
-- claims that report why a key was not claimed, the misfire rule on
-- takeover, and a notification when occurrences due soon are inserted.

-- The running (leased) executions of a job: small, probed by every claim of
-- a job whose overlap policy is not 'allow'.
CREATE INDEX executions_leased_by_job ON executions (job_id)
    WHERE status IN ('dispatched', 'running');

DROP FUNCTION wheel_claim(integer[], bigint[], uuid[], timestamptz[], float8);

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
--   'skipped'  another run of the job is still leased and its overlap policy
--              is 'skip': the occurrence is recorded skipped, with the reason;
--   'blocked'  the same under policy 'queue': left pending for later;
--   'early'    its fire_at is later than now + p_ahead_s (an edit or a retry
--              moved it): left pending, fire_at says when.
-- Keys not returned at all are not pending, held by another claim, of a
-- paused or deleted job, of a cron job edited since they were made (the
-- materialiser carries or supersedes them), or in a partition not ours.
CREATE FUNCTION wheel_claim(
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
        SELECT pe.partition
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
                       THEN CASE WHEN j.overlap = 'skip' THEN 'skipped' ELSE 'blocked' END
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
            error = NULL
        FROM picked p, jobs j
        WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for AND j.id = e.job_id
          AND p.state = 'claimed'
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

-- The misfire rule for occurrences that came due while nobody fired them (a
-- node took the partition over late, the cluster was down, the job was
-- paused): among a job's scheduled, never-dispatched pending occurrences
-- overdue by more than its grace, `skip` records them all skipped,
-- `fire_once` keeps the latest and skips the rest, `fire_all` keeps the
-- latest `misfire_replay_cap`. Retries and manual triggers always stay.
-- Epoch-fenced like a claim. Returns how many it skipped.
CREATE FUNCTION wheel_apply_misfire(p_partitions integer[], p_epochs bigint[])
RETURNS bigint LANGUAGE sql VOLATILE
AS $$
    WITH owned AS (
        SELECT pe.partition
        FROM partition_epochs pe
        JOIN unnest(p_partitions, p_epochs) AS mine (partition, epoch)
          ON pe.partition = mine.partition AND pe.epoch = mine.epoch
        FOR SHARE OF pe
    ), overdue AS (
        SELECT e.job_id, e.scheduled_for, j.misfire, j.misfire_replay_cap,
               row_number() OVER (PARTITION BY e.job_id ORDER BY e.scheduled_for DESC) AS newest
        FROM executions e
        JOIN jobs j ON j.id = e.job_id
        WHERE e.partition IN (SELECT partition FROM owned)
          AND e.status = 'pending'
          AND e.fire_at < clock_timestamp()
          AND e.attempt = 0
          AND e.trigger = 'schedule'
          AND j.status = 'active'
          AND e.fire_at < clock_timestamp() - make_interval(secs => j.misfire_grace_ms / 1000.0)
    ), skipped AS (
        UPDATE executions e
        SET status = 'skipped',
            finished_at = clock_timestamp(),
            reason = CASE o.misfire
                WHEN 'skip' THEN 'misfire: missed while no scheduler was running (policy skip)'
                WHEN 'fire_once' THEN 'misfire: a later missed run fired instead (policy fire_once)'
                ELSE 'misfire: beyond the replay cap of ' || o.misfire_replay_cap
                     || ' (policy fire_all)'
            END
        FROM overdue o
        WHERE e.job_id = o.job_id AND e.scheduled_for = o.scheduled_for
          AND e.status = 'pending'
          AND (o.misfire = 'skip'
               OR (o.misfire = 'fire_once' AND o.newest > 1)
               OR (o.misfire = 'fire_all' AND o.newest > o.misfire_replay_cap))
        RETURNING 1
    )
    SELECT count(*) FROM skipped
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
