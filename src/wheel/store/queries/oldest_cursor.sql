-- The least materialised active recurring job of the given partitions (NULL: none).
SELECT min(coalesce(materialised_to, created_at))
FROM jobs
WHERE partition = ANY(%(partitions)s::integer[]) AND status = 'active' 
  AND schedule_kind IN ('cron', 'interval')
