"""Structured logs: one JSON object per line, the event name plus its `extra` fields.

Modules log `log.info("node.partition_acquired", extra={"partition": 7})`;
this formatter keeps those fields (the standard one drops them), so logs can
be searched by field rather than parsed.
"""

from __future__ import annotations

import json
import logging
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


def configure(level: int = logging.INFO) -> None:
    """Send every log line to stderr as JSON (replaces earlier handlers)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
