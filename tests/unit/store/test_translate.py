"""psycopg errors become the most specific wheel error."""

from __future__ import annotations

import psycopg
import psycopg_pool
import pytest

from wheel.errors import StoreError, StoreUnavailable
from wheel.store.translate import translate, translated


def test_pool_timeout_means_unavailable() -> None:
    assert isinstance(translate(psycopg_pool.PoolTimeout("busy")), StoreUnavailable)


def test_a_lost_connection_means_unavailable() -> None:
    assert isinstance(translate(psycopg.OperationalError("connection refused")), StoreUnavailable)
    assert isinstance(translate(psycopg.errors.AdminShutdown("shutting down")), StoreUnavailable)


def test_other_errors_are_store_errors_naming_the_sqlstate() -> None:
    error = translate(psycopg.errors.UndefinedTable("relation missing"))
    assert type(error) is StoreError
    assert "42P01" in str(error)


async def test_translated_chains_the_original() -> None:
    original = psycopg.OperationalError("gone")
    with pytest.raises(StoreUnavailable) as caught:
        async with translated():
            raise original
    assert caught.value.__cause__ is original
