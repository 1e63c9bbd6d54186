-- See wheel_claim in the schema: epoch-fenced, skip-locked, tenant-capped, the misfire
-- and overlap policies applied; each claimed run is bound to the executor (id and
-- instance) it is handed to. The
-- claimed runs' tenants' in-flight counts move in the same statement, last
-- (with refuse_overshoot, SQLSTATE WH001 rolls back a claim that went over), then,
-- only when it claimed runs with a concurrency key, their keys' counts (wheel_count_keys,
-- which refuses an overshoot always: a key's limit holds runs claimed ahead too).
WITH claimed AS MATERIALIZED (
    SELECT state, job_id, scheduled_for, tenant_id, partition, fence, attempt, lease_until,
           job_version, task_type, payload, pool, priority, timeout_ms, fire_at, http_url,
           http_retry_client_errors, concurrency_key, key_room
    FROM wheel_claim(%(partitions)s::integer[], %(epochs)s::bigint[], %(job_ids)s::uuid[],
                     %(scheduled_fors)s::timestamptz[], %(executor_ids)s::text[],
                     %(instances)s::text[], %(lease_s)s::float8, %(ahead_s)s::float8,
                     %(first)s::timestamptz, %(last)s::timestamptz, %(waited)s::text[])
), counted AS (
    -- Only runs due now are held to the cap (see wheel_claim): an overshoot of runs
    -- handed over ahead of their instant is no reason to claim again.
    SELECT wheel_count_in_flight(array_agg(g.tenant_id ORDER BY g.tenant_id),
                                 array_agg(g.n ORDER BY g.tenant_id),
                                 %(refuse_overshoot)s::boolean AND bool_or(g.due)) AS over
    FROM (SELECT c.tenant_id, count(*)::integer AS n,
                 bool_or(c.fire_at <= clock_timestamp() + interval '1 second') AS due
          FROM claimed c WHERE c.state = 'claimed' GROUP BY c.tenant_id) g
), keyed AS (
    SELECT count(*) AS calls FROM (
        SELECT wheel_count_keys(array_agg(g.tenant_id ORDER BY g.tenant_id, g.key),
                                array_agg(g.key ORDER BY g.tenant_id, g.key),
                                array_agg(g.n ORDER BY g.tenant_id, g.key),
                                array_agg(g.room ORDER BY g.tenant_id, g.key))
        FROM counted,
             (SELECT c.tenant_id, c.concurrency_key AS key, count(*)::integer AS n,
                     min(c.key_room) AS room
              FROM claimed c WHERE c.state = 'claimed' AND c.concurrency_key IS NOT NULL
              GROUP BY c.tenant_id, c.concurrency_key) g
        HAVING count(*) > 0
    ) k
)
SELECT c.state, c.job_id, c.scheduled_for, c.tenant_id, c.partition, c.fence, c.attempt,
       c.lease_until, c.job_version, c.task_type, c.payload, c.pool, c.priority, c.timeout_ms,
       c.fire_at, c.http_url, c.http_retry_client_errors
FROM counted CROSS JOIN keyed CROSS JOIN claimed c
