-- The secrets that sign a tenant's requests (HTTP tasks): its own, and for a day after a
-- rotation the previous one (as notifications are signed, see claim_notifications).
SELECT notify_secret,
       CASE WHEN notify_secret_rotated_at > clock_timestamp() - interval '1 day'
            THEN notify_secret_previous END
FROM tenants WHERE id = %(tenant_id)s
