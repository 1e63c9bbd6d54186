-- What the node's HTTP runner needs of a tenant: the secrets that sign its requests (its
-- own, and for a day after a rotation the previous one, as notifications are signed)
-- and the hosts its HTTP tasks may reach.
SELECT notify_secret,
       CASE WHEN notify_secret_rotated_at > clock_timestamp() - interval '1 day'
            THEN notify_secret_previous END,
       http_hosts
FROM tenants WHERE id = %(tenant_id)s
