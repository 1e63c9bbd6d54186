"""The dashboard's pure helpers: schedules in words, DST changes found, colours per node."""

from __future__ import annotations

from datetime import UTC, datetime

from wheel.dashboard.pages import colour, next_offset_change, words
from wheel.model.jobs import Schedule, ScheduleKind


def test_the_next_offset_change_is_found_to_the_minute() -> None:
    # Europe/London springs forward at 01:00 UTC on the last Sunday of March.
    found = next_offset_change("Europe/London", datetime(2031, 1, 10, tzinfo=UTC))
    assert found is not None
    assert found == datetime(2031, 3, 30, 1, 0, tzinfo=UTC)
    back = next_offset_change("Europe/London", found)
    assert back is not None
    assert back == datetime(2031, 10, 26, 1, 0, tzinfo=UTC)


def test_zones_without_dst_and_unknown_zones_have_no_change() -> None:
    assert next_offset_change("UTC", datetime(2031, 1, 10, tzinfo=UTC)) is None
    assert next_offset_change("Asia/Tokyo", datetime(2031, 1, 10, tzinfo=UTC)) is None
    assert next_offset_change("Not/AZone", datetime(2031, 1, 10, tzinfo=UTC)) is None


def test_schedules_in_words_with_a_fallback_for_what_the_describer_does_not_know() -> None:
    assert words(Schedule(kind=ScheduleKind.CRON, cron="30 1 * * 1-5")) == (
        "At 01:30 AM, Monday through Friday"
    )
    assert words(Schedule(kind=ScheduleKind.CRON, cron="H H * * *")) == "cron H H * * *"
    assert words(Schedule(kind=ScheduleKind.NOW)) == "once, at once"


def test_each_node_has_a_stable_colour_and_no_owner_is_grey() -> None:
    assert colour("node-a") == colour("node-a")
    assert colour("node-a") != colour("node-b")
    assert colour(None) == "hsl(0, 0%, 50%)"
