-- See wheel_apply_misfire in the schema.
SELECT wheel_apply_misfire(%(partitions)s::integer[], %(epochs)s::bigint[])
