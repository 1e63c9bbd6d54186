-- Business calendars on a job (wheel.schedule.business_days): the calendars it names
-- (its tenant's, by name) and what a run on a day they close does. A calendar's edit
-- re-plans the jobs naming it (their version grows); the index finds them.
ALTER TABLE jobs
    ADD COLUMN calendars text[] NOT NULL DEFAULT '{}',
    ADD COLUMN calendar_policy text NOT NULL DEFAULT 'skip'
        CHECK (calendar_policy IN ('skip', 'next_business_day', 'previous_business_day'));

CREATE INDEX jobs_calendars ON jobs USING gin (calendars) WHERE calendars <> '{}';
