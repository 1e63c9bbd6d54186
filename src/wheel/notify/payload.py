"""A notification's JSON body: which run, what it became and why, in explain's words.

    {"id": "<notification id>", "type": "execution.dead", "created_at": "...",
     "execution": {"id": "<job id>@<instant>", "job_id": "...", "job": "nightly",
                   "scheduled_for": "...", "status": "dead", "reason": null,
                   "attempts": 3, "error": "ConnectionError: ..."},
     "summary": "failed all 3 attempts (last error: ...); retry it with ..."}

A missed deadline, a failure streak and a recovery add their own fields and
replace `type` and `summary` (`wheel.notify.events`).

`id` stays the same on every try of one notification: receivers deduplicate
by it (delivery is at least once). `error` is the first line of the error
recorded; `wheel executions get` has it whole.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from wheel.errors import first_line
from wheel.model.summaries import settled
from wheel.notify.events import event_fields
from wheel.store.outbox import Due


def _instant(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def document(due: Due) -> dict[str, Any]:
    return {
        "id": due.id,
        "type": f"execution.{due.status.value}",
        "created_at": _instant(due.created_at),
        "execution": {
            "id": due.key.id,
            "job_id": str(due.key.job_id),
            "job": due.job_name,
            "scheduled_for": _instant(due.key.scheduled_for),
            "status": due.status.value,
            "reason": due.reason,
            "attempts": due.attempt,
            "error": first_line(due.error) or None,
        },
        "summary": settled(due.status, attempt=due.attempt, error=due.error, reason=due.reason),
        **event_fields(due),
    }


def body(due: Due) -> bytes:
    return json.dumps(document(due), separators=(",", ":"), ensure_ascii=False).encode()
