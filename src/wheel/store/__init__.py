"""Postgres, the source of truth: migrations, queries, fenced batch operations."""
