"""The wait between tries of a notification: doubling to a cap, its second half random."""

from __future__ import annotations

import pytest

from wheel.notify.sender import SendSettings, backoff_s

SETTINGS = SendSettings(backoff_base_s=2.0, backoff_cap_s=3600.0)


@pytest.mark.parametrize(
    ("tries", "full"), [(1, 2.0), (2, 4.0), (3, 8.0), (11, 2048.0), (12, 3600.0), (40, 3600.0)]
)
def test_the_wait_doubles_to_the_cap_and_is_at_least_half_of_it(tries: int, full: float) -> None:
    assert backoff_s(tries, SETTINGS, lambda: 0.0) == full / 2
    assert backoff_s(tries, SETTINGS, lambda: 1.0) == full


def test_the_default_tries_outlast_a_receiver_down_overnight() -> None:
    tries = range(1, SETTINGS.max_tries)  # the waits between the 30 tries
    least = sum(backoff_s(n, SETTINGS, lambda: 0.0) for n in tries)
    most = sum(backoff_s(n, SETTINGS, lambda: 1.0) for n in tries)
    assert 9 * 3600 < least < most < 20 * 3600
