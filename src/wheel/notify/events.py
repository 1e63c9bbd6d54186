"""The parts of a notification's body that announce an event rather than a status.

    {"type": "execution.deadline_missed", ..., "deadline_at": "...",
     "summary": "had not succeeded by its deadline, 2026-...Z; it is running"}
    {"type": "job.failing", ..., "streak": {"runs": 3, "from": "...", "to": "..."},
     "summary": "3 runs in a row ended dead or needing review"}
    {"type": "job.recovered", ..., "streak": {"runs": 3, "from": "...", "to": "..."},
     "summary": "succeeded after 3 runs in a row ended dead or needing review"}

`execution` is the run that missed its deadline, the run that completed the
streak, or the success that ended it. `streak.to` is the instant of the
streak's latest failed run known when it was sent (for `job.failing`, the run's).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from wheel.model.notifications import NotificationEvent
from wheel.store.outbox import Due


def _instant(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _runs(count: int) -> str:
    return f"{count} run{'' if count == 1 else 's'}"


def event_fields(due: Due) -> dict[str, Any]:
    """The body's `type`, `summary` and the event's own fields; {} for a status notification."""
    if due.event == NotificationEvent.DEADLINE_MISSED:
        deadline = _instant(due.deadline_at) if due.deadline_at is not None else None
        status = due.status.value.replace("_", " ")
        return {
            "type": "execution.deadline_missed",
            "deadline_at": deadline,
            "summary": f"had not succeeded by its deadline, {deadline}; it is {status}",
        }
    if due.event in (NotificationEvent.FAILING, NotificationEvent.RECOVERED):
        streak = due.streak or 0
        fields: dict[str, Any] = {
            "type": f"job.{due.event}",
            "streak": {
                "runs": streak,
                "from": _instant(due.streak_from) if due.streak_from is not None else None,
            },
        }
        in_a_row = f"{_runs(streak)} in a row ended dead or needing review"
        if due.event == NotificationEvent.FAILING:
            fields["streak"]["to"] = _instant(due.key.scheduled_for)
            fields["summary"] = in_a_row
        else:
            fields["summary"] = f"succeeded after {in_a_row}"
        return fields
    return {}
