-- Move tenants' in-flight counts (see wheel_count_in_flight); true when a tenant
-- that gained runs is now over its cap.
SELECT wheel_count_in_flight(%(tenant_ids)s::uuid[], %(deltas)s::integer[])
