"""The CLI's unit tests talk to a fake API served on a local port (tests.unit.client.fake_api)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.client.fake_api import FakeApi, serving


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def address(api: FakeApi) -> Iterator[str]:
    with serving(api) as served:
        yield served
