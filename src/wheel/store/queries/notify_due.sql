-- Tell the owner of a partition that occurrences from this instant on are
-- pending (a resumed job, a manual retry): same channel as the insert trigger.
SELECT pg_notify('wheel_due', %(partition)s::integer || ':' || %(earliest_ms)s::bigint)
