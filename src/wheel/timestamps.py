"""protobuf Timestamps and aware UTC datetimes, both ways, exactly (no float on the way)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_timestamp(instant: datetime) -> Timestamp:
    micros = (instant - _UNIX_EPOCH) // _MICROSECOND
    return Timestamp(seconds=micros // 1_000_000, nanos=micros % 1_000_000 * 1000)


def to_datetime(timestamp: Timestamp) -> datetime:
    return timestamp.ToDatetime(tzinfo=UTC)
