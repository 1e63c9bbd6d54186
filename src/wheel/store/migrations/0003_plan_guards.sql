-- Plans that cannot go quadratic. Right after a bulk load a day partition has
-- no statistics; the planner then believed a probe per row was a scan per row
-- (claims of 1,000 keys ran for 15 s, a due load for 25 s, until autovacuum
-- analysed the partition). The claim and the due load only ever probe by
-- primary key or walk an index, so sequential scans are turned off inside
-- them. (Not in wheel_record_attempts: there, with scans off, the planner
-- walked a whole index as the outer side of its UPDATE join instead.)

ALTER FUNCTION wheel_claim(integer[], bigint[], uuid[], timestamptz[], float8, float8)
    SET enable_seqscan = off;

-- The loader's page: pending occurrences of active jobs in some partitions,
-- before an instant, after a keyset cursor, in firing order, with each job's
-- routing (tenant, pool, task type, overlap policy) probed by primary key.
CREATE FUNCTION wheel_load_due(
    p_partitions integer[], p_before timestamptz, p_after_fire_at timestamptz,
    p_after_job_id uuid, p_after_scheduled_for timestamptz, p_limit integer
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
    ORDER BY e.fire_at, e.job_id, e.scheduled_for
    LIMIT p_limit
$$;
