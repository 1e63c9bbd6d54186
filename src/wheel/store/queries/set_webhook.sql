-- A tenant's webhook changed; with a new secret, the old one keeps signing for a day.
UPDATE tenants
SET notify_url = %(url)s,
    notify_on = %(on_statuses)s::text[]::wheel_execution_status[],
    notify_secret_previous = CASE WHEN %(secret)s::text IS NULL THEN notify_secret_previous
                                  ELSE notify_secret END,
    notify_secret_rotated_at = CASE WHEN %(secret)s::text IS NULL THEN notify_secret_rotated_at
                                    ELSE clock_timestamp() END,
    notify_secret = coalesce(%(secret)s::text, notify_secret)
WHERE id = %(tenant_id)s
RETURNING coalesce(notify_url, '') AS url, notify_on::text[] AS on_statuses,
          notify_secret AS secret, notify_secret_rotated_at AS secret_rotated_at
