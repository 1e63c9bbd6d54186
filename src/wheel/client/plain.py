"""SDK results as plain JSON-able data: stable keys, ISO 8601 instants, units in names.

    json.dumps(wheel.client.plain.to_plain(client.get_job(job_id)), indent=2)

Dataclasses become dicts with their fields in declaration order; enums their
values; instants ISO 8601 strings with their UTC offset; durations seconds
under the field's name plus `_s` (`smear_s`, `timeout_s`); bytes base64 under
the name plus `_base64` (`payload_base64`), so every key says what its value
is and nothing is lost. `wheel ... --output json` prints exactly this.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import uuid
from datetime import date, datetime, timedelta
from typing import Any


def to_plain(value: object) -> Any:
    """`value` (a result, a list of them, or any field) as JSON-able data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        document: dict[str, Any] = {}
        for item in dataclasses.fields(value):
            key, converted = _field(item.name, getattr(value, item.name))
            document[key] = converted
        return document
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):  # a calendar's day
        return value.isoformat()
    if isinstance(value, timedelta):
        return _seconds(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list | tuple):
        return [to_plain(item) for item in value]
    if isinstance(value, set | frozenset):  # a calendar's weekdays
        return [to_plain(item) for item in sorted(value)]
    if isinstance(value, dict):
        return {str(key): to_plain(item) for key, item in value.items()}
    return value


def _field(name: str, value: object) -> tuple[str, Any]:
    if isinstance(value, timedelta):
        return f"{name}_s", _seconds(value)
    if isinstance(value, bytes):
        return f"{name}_base64", to_plain(value)
    return name, to_plain(value)


def _seconds(delta: timedelta) -> int | float:
    seconds = delta.total_seconds()
    return int(seconds) if seconds.is_integer() else seconds
