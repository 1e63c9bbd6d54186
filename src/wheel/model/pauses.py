"""Why a job is paused: its note, who paused it and when, and the words every view uses.

    pause = Pause(note="vendor outage, INC-123", by="alice", at=paused_at)
    pause.said(now)  # "paused by alice 2 h ago: vendor outage, INC-123" (CLI, dashboard)
    pause.said()  # "paused by alice at 2026-…Z: vendor outage, INC-123" (lists, explain)

`by` is the name of the API token that paused the job (as a person's retry records
it); `at` is the store's clock when it did. A job paused before pauses kept these has
neither ("paused"), and the note is optional ("paused by alice 2 h ago").

Pausing a paused job replaces the note, who and when only when it brings another note:
a repeated pause (the SDK's retry of a lost answer, a second click) changes nothing, so
the first `by` and `at` stay true. Resuming clears all three.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from wheel.durations import readable
from wheel.model.jobs import check_text

MAX_NOTE_LENGTH = 500


def check_note(note: str, field: str = "note") -> None:
    """A pause note: at most MAX_NOTE_LENGTH characters on one line (no control
    characters, newlines included: it is shown inline in lists and sentences)."""
    check_text(field, note, MAX_NOTE_LENGTH)


def _ago(at: datetime, now: datetime) -> str:
    """'just now', '42 s ago', '2 h 5 min ago' (a pause stamped by a clock ahead of the
    reader's is 'just now', not in the future)."""
    seconds = round((now - at).total_seconds())
    if seconds < 1:
        return "just now"
    if seconds < 60:
        return f"{seconds} s ago"
    return f"{readable(seconds)} ago"


def _instant(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Pause:
    """A paused job's note, who paused it and when (empty and None when not known)."""

    note: str = ""
    """Why, in the pauser's words ('' when none was given)."""
    by: str = ""
    """The name of the API token that paused it ('' for a job paused before this was kept)."""
    at: datetime | None = None
    """When it was paused, on the store's clock."""

    def said(self, now: datetime | None = None) -> str:
        """'paused by alice 2 h ago: vendor outage, INC-123', how long ago by the reader's
        clock `now`; without `now`, the instant ("at 2026-…Z"), which stays the same
        between two reads (what the API's sentences say)."""
        words = ["paused"]
        if self.by:
            words.append(f"by {self.by}")
        if self.at is not None:
            words.append(_ago(self.at, now) if now is not None else f"at {_instant(self.at)}")
        said = " ".join(words)
        return f"{said}: {self.note}" if self.note else said
