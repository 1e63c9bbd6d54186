-- Each partial index of leased runs answers only its own queries. The reaper's
-- executions_leases and the per-job executions_leased_by_job had the same predicate
-- (dispatched or running), so either could serve the other's query, scanned whole and
-- filtered. In a day partition analysed while all its runs were pending (a spike
-- registered ahead) both looked empty, and the planner took the wrong one: each claim
-- of a key of an overlap-limited job walked every run in flight that day (the claim's
-- Postgres CPU per run 1.45x in a spike of 5,000), and the reaper did the same for each
-- partition it owns. executions_leases now says `lease_until IS NOT NULL` (the same
-- rows: the table's CHECK ties a lease to those statuses) and the reaper names only
-- lease_until; the per-job probes name only the statuses.
DROP INDEX executions_leases;
CREATE INDEX executions_leases ON executions (partition, lease_until)
    WHERE lease_until IS NOT NULL;
