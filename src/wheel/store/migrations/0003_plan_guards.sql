-- The due load as a function whose plan cannot go quadratic. Right after a
-- bulk load a day partition has no statistics; the planner then believed a
-- probe per row was a scan per row (a due load ran for 25 s until autovacuum
-- analysed the partition). The store also analyses a partition itself after
-- a bulk insert (see Occurrences.insert); this function only ever walks the
-- due index and probes jobs by primary key, so scans are off inside it.
-- (Turning scans off in the claim and record functions made things worse:
-- the planner walked a whole index as the outer side of their UPDATE joins.)

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
           e.tenant_id, j.pool, j.task_type, j.overlap
    FROM executions e
    CROSS JOIN LATERAL (
        SELECT j.pool, j.task_type, j.overlap
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
