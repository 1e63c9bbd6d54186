"""Execution ids and partitions: deterministic, readable, reversible."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wheel.model.ids import ExecutionKey, JobId, partition_of

JOB = JobId(uuid.UUID("0f8e4b5a-3c2d-4e1f-9a8b-7c6d5e4f3a2b"))


def test_the_id_is_the_job_and_the_instant() -> None:
    key = ExecutionKey(JOB, datetime(2026, 11, 29, 9, 0, tzinfo=UTC))
    assert key.id == "0f8e4b5a-3c2d-4e1f-9a8b-7c6d5e4f3a2b@20261129T090000.000000Z"


def test_the_same_instant_in_any_zone_is_the_same_occurrence() -> None:
    utc = ExecutionKey(JOB, datetime(2026, 11, 29, 9, 0, tzinfo=UTC))
    tokyo = ExecutionKey(JOB, datetime(2026, 11, 29, 18, 0, tzinfo=timezone(timedelta(hours=9))))
    assert utc == tokyo
    assert utc.id == tokyo.id
    assert tokyo.scheduled_for.tzinfo is UTC


@given(
    job=st.uuids(),
    instant=st.datetimes(
        min_value=datetime(1971, 1, 1), max_value=datetime(9998, 12, 31), timezones=st.just(UTC)
    ),
)
def test_ids_parse_back(job: uuid.UUID, instant: datetime) -> None:
    key = ExecutionKey(JobId(job), instant)
    assert ExecutionKey.parse(key.id) == key


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no-separator", "expected '<job id>@<instant>'"),
        ("nope@20261129T090000.000000Z", "job id 'nope' is not a UUID"),
        (f"{JOB}@2026-11-29", "instant '2026-11-29' is not YYYYMMDDTHHMMSS.ffffffZ"),
    ],
)
def test_malformed_ids_say_what_is_wrong(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match="^" + reason.replace("(", r"\(") + "$"):
        ExecutionKey.parse(text)


def test_naive_instants_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        ExecutionKey(JOB, datetime(2026, 11, 29, 9, 0))


@given(st.uuids(), st.integers(min_value=1, max_value=4096))
def test_partition_is_stable_and_in_range(job: uuid.UUID, count: int) -> None:
    first = partition_of(job, count)
    assert 0 <= first < count
    assert partition_of(job, count) == first


def test_partitions_spread_evenly() -> None:
    counts = [0] * 16
    for n in range(16_000):
        counts[partition_of(uuid.UUID(int=n), 16)] += 1  # sequential ids: the worst case
    assert min(counts) > 850
    assert max(counts) < 1150
