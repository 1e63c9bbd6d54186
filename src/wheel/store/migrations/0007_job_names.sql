-- A job's name is unique among its tenant's jobs that are not deleted, so people
-- (and `wheel jobs apply`) can address a job by name. A deleted job frees its name.
--
-- Jobs that already share a name keep it in creation order: the oldest keeps the
-- name, each later one becomes "<name>-<the first 8 characters of its id>". The
-- version is left as it is: the name is no part of what the occurrences were made
-- from, and an edit in flight keeps its expected version.
UPDATE jobs AS j
SET name = left(j.name, 191) || '-' || left(j.id::text, 8), updated_at = now()
FROM (
    SELECT id, row_number() OVER (PARTITION BY tenant_id, name ORDER BY created_at, id) AS n
    FROM jobs
    WHERE status <> 'deleted'
) AS later
WHERE j.id = later.id AND later.n > 1;

CREATE UNIQUE INDEX jobs_tenant_name ON jobs (tenant_id, name) WHERE status <> 'deleted';
