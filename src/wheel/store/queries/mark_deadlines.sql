-- See wheel_mark_deadlines in the schema.
SELECT wheel_mark_deadlines(%(partitions)s::integer[], %(epochs)s::bigint[])
