-- Notifications: a webhook per tenant (or per job) for runs that need a person,
-- delivered at least once from an outbox in Postgres.
--
-- A run that becomes dead, needs_review or skipped, in any statement that makes
-- it so (a recorded attempt, the reaper, the claim's overlap skip, a misfire the
-- materialiser records), gets a row in `notifications` in the same transaction,
-- written by a trigger: a notification exists exactly when the status does, and
-- a node dying before it is sent loses nothing. Only rows changing to one of
-- those statuses fire the trigger (its WHEN clause), so the hot path of claims
-- and successes pays nothing for it.
--
-- Nodes send what is due (`next_at`): claiming a row moves `next_at` a lease
-- ahead and counts the try, so a node that dies mid-send leaves it due again
-- when the lease runs out. `tries` fences the result: only the try that claimed
-- it may record how it went.
--
-- Every tenant gets a signing secret now (gen_random_uuid draws from the strong
-- random source); the tenant reads it and rotates it through the API.
ALTER TABLE tenants
    ADD COLUMN notify_url text,
    ADD COLUMN notify_on wheel_execution_status[] NOT NULL DEFAULT '{dead,needs_review}'
        CHECK (notify_on <@ '{dead,needs_review,skipped}'::wheel_execution_status[]),
    ADD COLUMN notify_secret text NOT NULL
        DEFAULT 'whsec_' || replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
    ADD COLUMN notify_secret_rotated_at timestamptz,
    -- For a day after a rotation notifications carry a signature by this one too.
    ADD COLUMN notify_secret_previous text;

-- '' sends this job's notifications to its tenant's webhook.
ALTER TABLE jobs ADD COLUMN notify_url text NOT NULL DEFAULT '';

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
    CHECK (delivered_at IS NULL OR gave_up_at IS NULL)
);
-- The senders' path: what is due, soonest first.
CREATE INDEX notifications_due ON notifications (next_at)
    WHERE delivered_at IS NULL AND gave_up_at IS NULL;
-- Explain's path: the notifications of one run.
CREATE INDEX notifications_of_run ON notifications (job_id, scheduled_for);
-- Retention's path.
CREATE INDEX notifications_created ON notifications (created_at);

CREATE FUNCTION wheel_notify_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO notifications (tenant_id, job_id, scheduled_for, status, reason, attempt,
                               error, url)
    SELECT NEW.tenant_id, NEW.job_id, NEW.scheduled_for, NEW.status, NEW.reason, NEW.attempt,
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
