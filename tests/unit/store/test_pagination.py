"""Page tokens round-trip and forged ones are refused by name."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from wheel.errors import InvalidArgument
from wheel.store import pagination


def test_tokens_round_trip() -> None:
    instant, ident = datetime(2026, 11, 29, 9, tzinfo=UTC), uuid.uuid4()
    assert pagination.decode(pagination.encode(instant, ident)) == (instant, ident)
    assert pagination.decode("") is None


@pytest.mark.parametrize(
    "token",
    [
        "!!",
        "e30",
        "WyJ4IiwgInkiXQ",
        "WyIyMDI2LTExLTI5VDA5OjAwOjAwIiwgIjAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMCJd",
    ],
)
def test_forged_tokens_are_invalid_argument(token: str) -> None:
    with pytest.raises(InvalidArgument, match="page_token"):
        pagination.decode(token)


@pytest.mark.parametrize(("requested", "size"), [(0, 100), (1, 1), (1000, 1000)])
def test_page_size(requested: int, size: int) -> None:
    assert pagination.page_size(requested) == size
