"""protobuf Timestamps and datetimes: our fast conversions agree with protobuf's own."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given
from hypothesis import strategies as st

from wheel.timestamps import set_timestamp, to_datetime, to_timestamp

instants = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)


@given(instants)
def test_a_datetime_becomes_the_timestamp_protobuf_makes_and_comes_back(instant: datetime) -> None:
    reference = Timestamp()
    reference.FromDatetime(instant)
    assert to_timestamp(instant) == reference
    assert to_datetime(to_timestamp(instant)) == instant
    written = Timestamp(seconds=1, nanos=5)  # every field overwritten
    set_timestamp(written, instant)
    assert written == reference


@given(st.integers(min_value=-62_135_596_800 + 86_400, max_value=253_402_000_000),
       st.integers(min_value=0, max_value=999_999_999))  # fmt: skip
def test_a_timestamp_with_nanoseconds_reads_as_protobuf_reads_it(seconds: int, nanos: int) -> None:
    timestamp = Timestamp(seconds=seconds, nanos=nanos)
    assert to_datetime(timestamp) == timestamp.ToDatetime(tzinfo=UTC)
