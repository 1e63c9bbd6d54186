"""Claim-ahead: a crowded instant is claimed early enough to be with executors by it."""

from __future__ import annotations

from wheel.scheduler.claim_ahead import ClaimAhead

NOW = 1_800_000_000_000  # epoch ms, a whole second


def ahead(rate: float = 1000.0, floor: int = 500, cap: int = 30_000) -> ClaimAhead:
    return ClaimAhead(slice_ms=50, floor_ms=floor, cap_ms=cap, rate_per_s=rate)


def test_a_quiet_instant_is_claimed_prefetch_ahead() -> None:
    plan = ahead()
    t = NOW + 60_000
    assert plan.plan([t] * 10, NOW) == [t - 500] * 10, "10 runs at 1,000/s take 10 ms"


def test_a_crowded_instant_is_claimed_as_long_ahead_as_its_hand_over_takes() -> None:
    plan = ahead(rate=1000.0)
    t = NOW + 60_000
    assert set(plan.plan([t] * 10_000, NOW)) == {t - 10_000}
    assert plan.claim_at(t + 20) == t - 10_000 + 20 - 20, "the same second, the same plan"


def test_claiming_ahead_stops_at_the_cap() -> None:
    plan = ahead(rate=1000.0, cap=4000)
    t = NOW + 60_000
    assert set(plan.plan([t] * 10_000, NOW)) == {t - 4000}


def test_a_crowded_second_moves_the_seconds_before_it_earlier() -> None:
    plan = ahead(rate=1000.0)
    t = NOW + 60_000
    claims = plan.plan([t] * 5000 + [t + 1000] * 5000, NOW)
    assert set(claims[5000:]) == {t + 1000 - 5000}
    assert set(claims[:5000]) == {t - 9000}, "handed over before the later second begins"


def test_an_instant_loaded_in_batches_is_handed_over_without_a_pause() -> None:
    plan = ahead(rate=1000.0)
    t = NOW + 60_000
    first = set(plan.plan([t] * 5000, NOW))
    second = set(plan.plan([t] * 5000, NOW + 100))
    assert first == {t - 5000}
    assert second == {t - 10_000}
    # The second batch takes 5 s from t - 10 s: it runs out when the first one's time comes.


def test_runs_due_now_or_past_are_claimed_now_and_not_counted() -> None:
    plan = ahead(rate=1000.0)
    assert plan.plan([NOW - 5000] * 3000, NOW) == [NOW - 5500] * 3000
    assert plan.claim_at(NOW + 60_000) == NOW + 60_000 - 500


def test_seconds_gone_by_are_forgotten() -> None:
    plan = ahead(rate=1000.0)
    t = NOW + 2000
    plan.plan([t] * 10_000, NOW)
    assert plan.claim_at(t) == t - 10_000
    plan.plan([], t + 5000)
    assert plan.claim_at(t) == t - 500, "its count went with its second"


def test_saturated_windows_measure_the_rate_and_idle_ones_do_not() -> None:
    plan = ahead(rate=5000.0)
    plan.observe(0.0, handed=0, waiting=10)
    plan.observe(0.5, handed=400, waiting=10)
    plan.observe(1.0, handed=800, waiting=10)
    assert (plan.rate_per_s, plan.measured) == (800.0, True)
    plan.observe(1.5, handed=1000, waiting=0)  # the queue ran dry: hand-over kept up
    plan.observe(2.0, handed=1000, waiting=5)
    assert plan.rate_per_s == 800.0
    plan.observe(3.0, handed=2200, waiting=5)
    assert plan.rate_per_s == 1000.0, "smoothed: half the old, half the new"
