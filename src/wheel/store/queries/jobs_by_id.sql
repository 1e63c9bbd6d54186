-- Jobs by id, whichever tenant's (the caller tells its own from another's),
-- locked against edits until the caller's transaction ends.
SELECT * FROM jobs WHERE id = ANY(%(ids)s::uuid[]) FOR SHARE
