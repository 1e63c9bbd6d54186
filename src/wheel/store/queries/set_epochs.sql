-- Record partition epochs, only forward: an epoch older than the stored one
-- is refused (its node lost the partition). Returns the partitions set.
INSERT INTO partition_epochs AS pe (partition, epoch, node_id, updated_at)
SELECT partition, epoch, %(node_id)s, now()
FROM unnest(%(partitions)s::integer[], %(epochs)s::bigint[]) AS t (partition, epoch)
ON CONFLICT (partition) DO UPDATE
SET epoch = excluded.epoch, node_id = excluded.node_id, updated_at = excluded.updated_at
WHERE pe.epoch <= excluded.epoch
RETURNING partition
