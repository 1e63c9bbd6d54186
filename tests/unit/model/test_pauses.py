"""A paused job's words: who paused it, when and why, the same in every view."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from wheel.errors import InvalidArgument
from wheel.model.pauses import MAX_NOTE_LENGTH, Pause, check_note

NOW = datetime.now(UTC)


def test_the_reader_sees_who_how_long_ago_and_why() -> None:
    pause = Pause("vendor outage, INC-123", "alice", NOW - timedelta(hours=2))
    assert pause.said(NOW) == "paused by alice 2 h ago: vendor outage, INC-123"
    later = Pause("", "alice", NOW - timedelta(hours=2, minutes=5))
    assert later.said(NOW) == "paused by alice 2 h 5 min ago"
    assert Pause("x", "bob", NOW - timedelta(seconds=42.4)).said(NOW) == "paused by bob 42 s ago: x"
    assert Pause("", "bob", NOW - timedelta(days=3)).said(NOW) == "paused by bob 3 d ago"


def test_a_pause_stamped_ahead_of_the_readers_clock_is_just_now() -> None:
    assert Pause("", "bob", NOW + timedelta(seconds=3)).said(NOW) == "paused by bob just now"


def test_without_a_readers_clock_the_instant_is_written_so_two_reads_agree() -> None:
    at = NOW.replace(microsecond=123456)
    pause = Pause("vendor outage", "alice", at)
    assert pause.said() == f"paused by alice at {at:%Y-%m-%dT%H:%M:%S}.123Z: vendor outage"


def test_a_job_paused_before_notes_were_kept_is_just_paused() -> None:
    assert Pause().said(NOW) == "paused"
    assert Pause().said() == "paused"
    assert Pause(note="why").said() == "paused: why"


def test_a_note_is_one_bounded_line() -> None:
    check_note("")
    check_note("é" * MAX_NOTE_LENGTH)
    with pytest.raises(InvalidArgument, match=r"^note: longer than 500 characters"):
        check_note("x" * (MAX_NOTE_LENGTH + 1))
    for bad in ("two\nlines", "tab\there", "nul\x00", "bell\x07", "c1\x85"):
        with pytest.raises(InvalidArgument, match="note: must not contain control characters"):
            check_note(bad)
