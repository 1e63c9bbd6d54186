"""Postgres, the source of truth: migrations, queries, fenced batch operations.

store = await Store.open(dsn)       # after `wheel migrate`
await store.occurrences.claim(keys, epochs, lease_s=30)
"""

from wheel.store.migrate import migrate, wait_until_migrated
from wheel.store.store import Store

__all__ = ["Store", "migrate", "wait_until_migrated"]
