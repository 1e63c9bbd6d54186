"""protobuf Timestamps and aware UTC datetimes, both ways, exactly (no float on the way)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_timestamp(instant: datetime) -> Timestamp:
    delta = instant - _UNIX_EPOCH  # timedelta normalises: 0 <= seconds < 86400, micros >= 0
    return Timestamp(seconds=delta.days * 86_400 + delta.seconds, nanos=delta.microseconds * 1000)


def to_datetime(timestamp: Timestamp) -> datetime:
    # Nanoseconds truncated to microseconds, as Timestamp.ToDatetime does, in a third
    # of its time (it was a tenth of an executor's per-run cost).
    return _UNIX_EPOCH + timedelta(seconds=timestamp.seconds, microseconds=timestamp.nanos // 1000)
