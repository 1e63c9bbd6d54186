-- Notifications past retention. One still being tried is kept whatever its age.
DELETE FROM notifications
WHERE created_at < %(before)s AND (delivered_at IS NOT NULL OR gave_up_at IS NOT NULL)
