"""Fixtures of the scheduler's integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.integration.scheduler.scripted_executor import STARTED


@pytest.fixture(autouse=True)
async def _stop_scripted_executors() -> AsyncIterator[None]:
    """Stop the scripted executors a test left running (a failed assertion skips its stop)."""
    yield
    while STARTED:
        await STARTED.pop().stop()
