SELECT coalesce(notify_url, '') AS url, notify_on::text[] AS on_statuses, notify_secret AS secret,
       notify_secret_rotated_at AS secret_rotated_at
FROM tenants WHERE id = %(tenant_id)s
