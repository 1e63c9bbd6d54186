"""Structured logs: one JSON object per line, the event name plus its `extra` fields.

Modules log `log.info("node.partition_acquired", extra={"partition": 7})`;
this formatter keeps those fields (the standard one drops them), so logs can
be searched by field rather than parsed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from wheel import tracing

# Attributes every LogRecord has; anything else came from `extra`.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for name, value in record.__dict__.items():
            if name not in _STANDARD and not name.startswith("_"):
                document[name] = value
        document.update(tracing.log_fields())  # the span it was logged in, when tracing
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        return json.dumps(document, default=str)


THROTTLED = ("psycopg.pool",)
"""Libraries that log every try while a dependency is away: psycopg.pool, each reconnect
attempt (a few a second while Postgres is down; wheel's own store.unreachable and
store.reconnected events say when it goes and comes back)."""
THROTTLE_S = 30.0


class Throttle(logging.Filter):
    """Lets one record per message template through every `every_s`; the next one let
    through counts those left out (`suppressed`)."""

    def __init__(self, every_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._every_s = every_s
        self._clock = clock
        self._last: dict[object, tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        now = self._clock()
        key = (record.name, record.msg)
        last = self._last.get(key)
        if last is not None and now - last[0] < self._every_s:
            self._last[key] = (last[0], last[1] + 1)
            return False
        if last is not None and last[1]:
            record.suppressed = last[1]
        self._last[key] = (now, 0)
        return True


def configure(level: int = logging.INFO) -> None:
    """Send every log line to stderr as JSON (replaces earlier handlers)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in THROTTLED:
        logger = logging.getLogger(name)
        logger.filters[:] = [Throttle(THROTTLE_S)]
