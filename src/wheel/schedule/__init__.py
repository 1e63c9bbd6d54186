"""Schedules: cron in IANA zones with explicit DST rules, smearing, previews (pure)."""
