-- See wheel_check_streaks in the schema.
SELECT event, job_id, streak FROM wheel_check_streaks(%(partitions)s::integer[], %(epochs)s::bigint[])
