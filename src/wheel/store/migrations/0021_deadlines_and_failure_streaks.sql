-- Deadlines that alert, and notifications after consecutive failures and on recovery.
--
-- A job may give each run a deadline: it must have succeeded within `deadline_ms` of its
-- scheduled instant. The instant is stamped on the run when it is made (scheduled runs
-- of jobs that have a deadline only: NULL otherwise, so other runs cost nothing), and
-- the owner of the run's partition marks a run that misses it (`deadline_missed_at`)
-- once, in the statement that also writes its `deadline_missed` notification
-- (wheel_mark_deadlines). The partial index holds only the runs that can still miss:
-- with a deadline, not marked, neither skipped nor cancelled, and not succeeded in time.
--
-- A job may ask to be told when its runs end dead or needing review N times in a row
-- (`notify_after_failures`), and when it next succeeds. `failing_since` is the first run
-- of the streak it was told about (NULL: none); wheel_check_streaks keeps it.
ALTER TABLE jobs
    ADD COLUMN deadline_ms bigint CHECK (deadline_ms BETWEEN 1000 AND 31622400000),
    ADD COLUMN notify_after_failures integer NOT NULL DEFAULT 0
        CHECK (notify_after_failures BETWEEN 0 AND 1000),
    ADD COLUMN failing_since timestamptz;

-- The jobs a streak sweep reads: those that ask, or still have a streak to close.
CREATE INDEX jobs_watch_failures ON jobs (partition)
    WHERE notify_after_failures > 0 OR failing_since IS NOT NULL;

ALTER TABLE executions
    ADD COLUMN deadline_at timestamptz,
    ADD COLUMN deadline_missed_at timestamptz;

CREATE INDEX executions_deadlines ON executions (partition, deadline_at)
    WHERE deadline_at IS NOT NULL AND deadline_missed_at IS NULL
      AND status NOT IN ('skipped', 'cancelled')
      AND (status <> 'succeeded' OR finished_at > deadline_at);

-- NULL: a notification of the run's status (the trigger's); otherwise what it announces.
ALTER TABLE notifications
    ADD COLUMN event text CHECK (event IN ('deadline_missed', 'failing', 'recovered')),
    ADD COLUMN deadline_at timestamptz,
    ADD COLUMN streak integer,
    ADD COLUMN streak_from timestamptz;

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
