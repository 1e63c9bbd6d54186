"""Fake API servers on loopback, each on its own loop thread, and a job seeded in them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.client.fake_api import FakeApi, serving


@pytest.fixture
def api() -> FakeApi:
    return FakeApi("first")


@pytest.fixture
def address(api: FakeApi) -> Iterator[str]:
    with serving(api) as address:
        yield address


@pytest.fixture
def second_api() -> FakeApi:
    return FakeApi("second")


@pytest.fixture
def second_address(second_api: FakeApi) -> Iterator[str]:
    with serving(second_api) as address:
        yield address
