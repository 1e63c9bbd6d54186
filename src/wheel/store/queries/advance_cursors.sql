-- Move each job's cursor forward (never back) and record the version its
-- occurrences were made from, unless the job was edited meanwhile: then the
-- next run starts over from the new version.
UPDATE jobs j
SET materialised_to = greatest(coalesce(j.materialised_to, u.materialised_to), u.materialised_to),
    materialised_version = u.version
FROM unnest(%(job_ids)s::uuid[], %(versions)s::bigint[], %(materialised_tos)s::timestamptz[])
     AS u (id, version, materialised_to)
WHERE j.id = u.id AND j.version = u.version
RETURNING j.id
