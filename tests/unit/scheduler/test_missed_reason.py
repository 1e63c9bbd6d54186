"""The materialiser's reason for a run it makes already missed: how late, and the rule."""

from __future__ import annotations

from datetime import timedelta

from wheel.model.jobs import MisfirePolicy
from wheel.scheduler.materialiser import missed_reason


def test_a_missed_run_says_how_long_before_it_was_materialised_it_came_due() -> None:
    grace = timedelta(minutes=1)
    assert missed_reason(200.0, grace, MisfirePolicy.SKIP, 10) == (
        "misfire: came due 3 min 20 s before it was materialised, past its 1 min grace"
        " (policy skip)"
    )
    assert missed_reason(90.0, grace, MisfirePolicy.FIRE_ONCE, 10).endswith(
        "past its 1 min grace; a later run fires instead (policy fire_once)"
    )
    assert missed_reason(7200.0, grace, MisfirePolicy.FIRE_ALL, 3) == (
        "misfire: came due 2 h before it was materialised, past its 1 min grace;"
        " the latest 3 fire instead, the replay cap (policy fire_all)"
    )
