-- Active recurring (cron and interval) jobs of the given partitions whose occurrences stop short of the
-- target or were made from an older version, a page at a time (keyset on id).
SELECT * FROM jobs
WHERE partition = ANY(%(partitions)s::integer[])
  AND status = 'active'
  AND schedule_kind IN ('cron', 'interval')
  AND (materialised_to IS NULL OR materialised_to < %(target)s OR materialised_version <> version)
  AND id > %(after_id)s::uuid
ORDER BY id
LIMIT %(limit)s
