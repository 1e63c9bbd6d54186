-- How one try went, recorded only by the try that holds the row (same count of tries).
UPDATE notifications
SET delivered_at = CASE WHEN %(delivered)s THEN clock_timestamp() END,
    gave_up_at = CASE WHEN NOT %(delivered)s AND %(give_up)s THEN clock_timestamp() END,
    next_at = CASE WHEN %(delivered)s OR %(give_up)s THEN next_at
                   ELSE clock_timestamp() + make_interval(secs => %(retry_in_s)s) END,
    last_error = %(error)s,
    last_status_code = %(status_code)s
WHERE id = %(id)s AND tries = %(tries)s AND delivered_at IS NULL AND gave_up_at IS NULL
RETURNING id
