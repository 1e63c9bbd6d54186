-- What a commit this session acknowledges survives: the synchronous settings, and the
-- standbys the server waits for now. sync_state is shown to superusers and pg_monitor only;
-- rows whose state this role cannot see are counted as unseen.
SELECT current_setting('synchronous_commit'),
       current_setting('synchronous_standby_names'),
       (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')),
       (SELECT count(*) FROM pg_stat_replication WHERE sync_state IS NULL)
