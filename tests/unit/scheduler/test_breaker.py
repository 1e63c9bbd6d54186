"""The circuit breaker: opens after N consecutive failures, one probe after the cool-down."""

from __future__ import annotations

from wheel.scheduler.breaker import Breakers, BreakerState


def breakers() -> Breakers:
    return Breakers(threshold=3, cooldown_s=10.0, probe_timeout_s=60.0)


def test_closed_until_the_threshold_of_consecutive_failures() -> None:
    b = breakers()
    b.record("t", False, 0.0)
    b.record("t", False, 0.0)
    b.record("t", True, 0.0)  # a success resets the count
    b.record("t", False, 0.0)
    b.record("t", False, 0.0)
    assert b.allow("t", 1.0)
    b.record("t", False, 1.0)
    assert b.state("t") is BreakerState.OPEN
    assert not b.allow("t", 5.0)
    assert b.allow("other", 5.0), "per task type"


def test_one_probe_after_the_cooldown_then_close_or_reopen() -> None:
    b = breakers()
    for _ in range(3):
        b.record("t", False, 0.0)
    assert not b.probe_due("t", 9.9)
    assert b.probe_due("t", 10.0)
    assert b.allow("t", 10.0), "the probe"
    assert not b.allow("t", 10.1), "only one probe"
    b.record("t", False, 11.0)
    assert b.state("t") is BreakerState.OPEN
    assert b.next_change() == 21.0
    assert b.allow("t", 21.0)
    b.record("t", True, 22.0)
    assert b.state("t") is BreakerState.CLOSED
    assert b.allow("t", 22.0)


def test_a_lost_probe_is_given_up_after_its_timeout() -> None:
    b = breakers()
    for _ in range(3):
        b.record("t", False, 0.0)
    assert b.allow("t", 10.0)
    assert not b.allow("t", 69.0)
    assert b.allow("t", 70.0), "the probe's result never came: another one"
