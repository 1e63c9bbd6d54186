"""Deadlines and failure streaks: what is accepted, what a notification says, what explain says."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.duration_pb2 import Duration

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api.convert import execution_to, policies_from, policies_to
from wheel.api.server.explain_deadlines import deadline_clause, deadline_step
from wheel.api.server.waiting import Attention
from wheel.errors import InvalidArgument
from wheel.model.executions import Execution, ExecutionStatus, Trigger
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.model.jobs import Policies
from wheel.notify.payload import document
from wheel.store.outbox import Due

AT = datetime.now(UTC).replace(microsecond=0)


@pytest.mark.parametrize(
    ("policies", "field", "reason"),
    [
        ({"deadline": timedelta(milliseconds=999)}, "policies.deadline", "between 1s and 366"),
        ({"deadline": timedelta(days=366, seconds=1)}, "policies.deadline", "between 1s"),
        ({"deadline": timedelta(seconds=-5)}, "policies.deadline", "between 1s"),
        ({"notify_after_failures": 1001}, "policies.notify_after_failures", "not in 0-1000"),
        ({"notify_after_failures": -1}, "policies.notify_after_failures", "not in 0-1000"),
    ],
)
def test_a_bad_deadline_or_streak_length_is_refused_naming_the_field(
    policies: dict[str, object], field: str, reason: str
) -> None:
    with pytest.raises(InvalidArgument, match=reason) as caught:
        Policies(**policies)  # type: ignore[arg-type]
    assert caught.value.field == field


def test_the_bounds_are_accepted_and_travel_through_the_api() -> None:
    for deadline in (timedelta(seconds=1), timedelta(days=366), timedelta(minutes=30)):
        sent = Policies(deadline=deadline, notify_after_failures=3)
        assert policies_from(policies_to(sent)) == sent
    assert policies_from(policies_to(Policies())).deadline is None
    assert not policies_to(Policies()).HasField("deadline")


def test_the_server_refuses_a_short_deadline_naming_the_field() -> None:
    message = pb.JobPolicies(deadline=Duration(nanos=500_000_000), notify_after_failures=2)
    with pytest.raises(InvalidArgument, match="between 1s and 366 days") as caught:
        policies_from(message)
    assert caught.value.field == "policies.deadline"
    with pytest.raises(InvalidArgument) as caught:
        policies_from(pb.JobPolicies(notify_after_failures=5000))
    assert caught.value.field == "policies.notify_after_failures"


def _due(event: str | None, status: ExecutionStatus, **extra: object) -> Due:
    return Due(
        id=str(uuid.uuid4()), tenant_id=TenantId(uuid.uuid4()),
        key=ExecutionKey(JobId(uuid.uuid4()), AT), job_name="nightly", status=status,
        reason=None, attempt=1, error=None, url="https://hooks.example.com/", created_at=AT,
        tries=1, secrets=("s",), event=event, **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_missed_deadline_says_when_and_what_the_run_is() -> None:
    doc = document(
        _due("deadline_missed", ExecutionStatus.RUNNING, deadline_at=AT + timedelta(minutes=30))
    )
    deadline = (AT + timedelta(minutes=30)).isoformat(timespec="microseconds")
    assert doc["type"] == "execution.deadline_missed"
    assert doc["deadline_at"] == deadline.replace("+00:00", "Z")
    assert (
        doc["summary"] == f"had not succeeded by its deadline, {doc['deadline_at']}; it is running"
    )
    assert doc["execution"]["status"] == "running"


def test_a_streak_and_its_recovery_say_how_long_it_was() -> None:
    first = AT - timedelta(hours=3)
    failing = document(_due("failing", ExecutionStatus.DEAD, streak=3, streak_from=first))
    assert failing["type"] == "job.failing"
    assert failing["streak"]["runs"] == 3
    assert failing["streak"]["from"].startswith(first.isoformat()[:19])
    assert failing["summary"] == "3 runs in a row ended dead or needing review"
    recovered = document(_due("recovered", ExecutionStatus.SUCCEEDED, streak=4, streak_from=first))
    assert recovered["type"] == "job.recovered"
    assert recovered["summary"] == "succeeded after 4 runs in a row ended dead or needing review"
    assert "to" not in recovered["streak"]


def test_a_status_notification_is_unchanged() -> None:
    doc = document(_due(None, ExecutionStatus.DEAD))
    assert doc["type"] == "execution.dead"
    assert "deadline_at" not in doc
    assert "streak" not in doc


def _execution(status: ExecutionStatus, *, missed: bool) -> Execution:
    return Execution(
        key=ExecutionKey(JobId(uuid.uuid4()), AT), tenant_id=TenantId(uuid.uuid4()),
        partition=PartitionId(0), job_version=1, status=status, fire_at=AT, attempt=1, fence=1,
        lease_until=None, executor_id=None, priority=0, trigger=Trigger.SCHEDULE, reason=None,
        error=None, created_at=AT, started_at=None, finished_at=None,
        deadline_at=AT + timedelta(minutes=30),
        deadline_missed_at=AT + timedelta(minutes=30, seconds=1) if missed else None,
    )  # fmt: skip


def test_explain_names_the_deadline_missed_and_when() -> None:
    result = api.Explanation()
    execution = _execution(ExecutionStatus.RUNNING, missed=True)
    deadline_step(result, execution)
    (step,) = result.steps
    at = (AT + timedelta(minutes=30)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    instant = AT.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert step.what == "deadline missed"
    assert step.detail.startswith(f"deadline missed at {at} (deadline 30 min after {instant})")
    assert (
        deadline_clause(execution) == f"; it missed its deadline, {at} (30 min after its instant)"
    )
    # A run that succeeds late stays marked; one on time, or not yet due, says its deadline.
    assert "missed" in deadline_clause(_execution(ExecutionStatus.SUCCEEDED, missed=True))
    assert deadline_clause(_execution(ExecutionStatus.SUCCEEDED, missed=False)) == ""
    assert deadline_clause(_execution(ExecutionStatus.PENDING, missed=False)).startswith(
        "; it must succeed by"
    )
    message = execution_to(execution)
    assert message.HasField("deadline_missed_at")
    assert message.deadline_at.ToDatetime(UTC) == AT + timedelta(minutes=30)


def test_attention_counts_missed_deadlines_in_its_words() -> None:
    assert Attention(deadline_missed=2).needed
    assert Attention(failing=1, deadline_missed=2).summary == "1 failing, 2 missed deadline"
    assert not Attention().needed
