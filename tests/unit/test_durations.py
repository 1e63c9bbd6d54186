"""Durations read as people say them: a short figure in a unit that grows with it."""

from __future__ import annotations

import pytest

from wheel.durations import readable


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0.0 ms"), (0.0025, "2.5 ms"), (0.0123, "12 ms"), (0.84, "840 ms"),
        (1.0, "1.0 s"), (25.7025, "25.7 s"), (59.9, "59.9 s"), (59.97, "1 min"),
        (192, "3 min 12 s"), (3600, "1 h"), (7500, "2 h 5 min"), (86_400 * 3 + 3600 * 4, "3 d 4 h"),
        (-0.003, "-3.0 ms"), (-25.7, "-25.7 s"),
    ],
)  # fmt: skip
def test_readable(seconds: float, text: str) -> None:
    assert readable(seconds) == text
