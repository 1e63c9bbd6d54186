"""The node's outgoing messages on the wire: what the executor's side reads back."""

from __future__ import annotations

import uuid
from datetime import timedelta

from tests.unit.scheduler.helpers import PARTITION, T0, A
from wheel.executor.messages import dispatch_from_proto
from wheel.model.executions import Claimed, Fenced
from wheel.model.ids import ExecutionKey, JobId
from wheel.scheduler.messages import NOT_YOURS, outgoing_to_proto
from wheel.scheduler.outgoing import Acknowledgements, Dispatch, Dispatches, Refusal


def _dispatch(n: int) -> Dispatch:
    key = ExecutionKey(JobId(uuid.uuid4()), T0 + timedelta(minutes=n))
    claimed = Claimed(
        key=key, tenant_id=A, partition=PARTITION, fence=3, attempt=2,
        lease_until=T0 + timedelta(minutes=n, seconds=30), job_version=1, task_type="report",
        payload=b"p", pool="default", priority=0, timeout_s=60.0, fire_at=key.scheduled_for,
    )  # fmt: skip
    return Dispatch(key, claimed, key.scheduled_for, key.scheduled_for + timedelta(minutes=1))


def test_dispatches_read_back_as_the_executor_sees_them() -> None:
    one, two = _dispatch(0), _dispatch(1)
    single = outgoing_to_proto(Dispatches((one,)))
    assert single.WhichOneof("body") == "dispatch"
    many = outgoing_to_proto(Dispatches((one, two)))
    assert many.WhichOneof("body") == "dispatches"
    read = [dispatch_from_proto(d) for d in many.dispatches.dispatches]
    assert [(d.execution_id, d.fence, d.attempt, d.start_at) for d in read] == [
        (one.key.id, 3, 2, one.start_at),
        (two.key.id, 3, 2, two.start_at),
    ]
    assert read[0].deadline == one.deadline


def test_acknowledgements_carry_accepted_and_stale_and_a_refusal_tells_nothing() -> None:
    key = _dispatch(0).key
    acks = outgoing_to_proto(
        Acknowledgements((Fenced(key, 3),), (Refusal("other@x", 1, current_fence=4),))
    ).acknowledgements
    assert [(a.execution_id, a.fence) for a in acks.accepted] == [(key.id, 3)]
    assert [(s.execution_id, s.fence, s.current_fence) for s in acks.stale] == [("other@x", 1, 4)]
    assert outgoing_to_proto(Acknowledgements()).WhichOneof("body") == "acknowledgements"
    refused = outgoing_to_proto(Refusal(key.id, 3, not_yours=True, current_fence=9)).stale_fence
    assert (refused.reason, refused.current_fence) == (NOT_YOURS, 0)
