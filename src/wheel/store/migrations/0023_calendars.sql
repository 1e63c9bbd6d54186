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
