-- A number kept for a migration made beside this one on another branch: it changes
-- nothing. Where that migration is merged, this file is dropped.
SELECT 1;
