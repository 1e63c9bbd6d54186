"""A robustness run's history: what the system acknowledged, as JSON lines.

One object a line, each with a `kind`:

- `create`: a CreateJob the client sent; `acked` says whether the API answered it.
  `instants` lists the runs the job promises (its due instants, ISO 8601);
  `idempotent`, `overlap`, `misfire`, `misfire_grace_s` are its policies.
- `start` / `finish`: an executor invoked / left a task handler, with the run
  (`job_id`, `scheduled_for`), its `fence` and `attempt`, the `executor` and the
  instant (`at`). Written by the handler itself, so a killed executor's starts stay.
- `execution` / `attempt`: the store's rows, read after the run (`status`, `fence`,
  `reason`, `fire_at`, `finished_at`, `retries`; per attempt its `fence`, `outcome`,
  `executor`, `started_at`, `finished_at`).
- `transition`: each change of a run's `status` or `fence` in the store, with the
  instant its transaction `committed` (tests/robustness/journal.py).
- `fault`: what was injected and when (for the reader; the model ignores it).
- `end`: `due_until`, the instant up to which every promised run must have ended.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Event = dict[str, Any]


def instant(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def run_key(event: Event) -> tuple[str, datetime]:
    """A run's identity: its job and its instant (compared as instants, not text)."""
    return str(event["job_id"]), instant(event["scheduled_for"])


def execution_id(job_id: str, scheduled_for: datetime) -> str:
    """The store's name of a run (wheel_execution_id)."""
    return f"{job_id}@{scheduled_for.astimezone(UTC):%Y%m%dT%H%M%S.%fZ}"


def write(path: Path, events: Iterable[Event]) -> None:
    with path.open("a") as out:
        for event in events:
            out.write(json.dumps(event, sort_keys=True, default=str) + "\n")


def read(path: Path) -> Iterator[Event]:
    for line in path.read_text().splitlines():
        if line.strip():
            yield json.loads(line)
