-- HTTP tasks (wheel.model.http_tasks): a job may name a URL the nodes POST its runs
-- to, and whether its endpoint's 4xx answers are retried. An attempt can now be
-- 'rejected': a failure never retried (0011 teaches the functions; a new enum
-- value cannot be used in the transaction that adds it).
ALTER TABLE jobs
    ADD COLUMN http_url text NOT NULL DEFAULT '',
    ADD COLUMN http_retry_client_errors boolean NOT NULL DEFAULT false;

ALTER TYPE wheel_outcome ADD VALUE 'rejected';
