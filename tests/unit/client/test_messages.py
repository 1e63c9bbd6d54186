"""Server messages become the SDK's types field for field, as the server's model had them."""

from __future__ import annotations

import base64
import json
import sys
import uuid
from datetime import UTC, datetime, timedelta

import grpc
import pytest

import wheel
from wheel._proto.wheel.v1 import api_pb2 as api
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api import convert
from wheel.api.status import RemoteError
from wheel.client import Verdict, messages
from wheel.client.plain import to_plain
from wheel.model import executions as mx
from wheel.model import jobs as mj
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.schedule import PreviewRun

T0 = datetime(2027, 3, 28, 0, 30, 0, 123456, tzinfo=UTC)


def _model_job(schedule: mj.Schedule) -> mj.Job:
    spec = mj.JobSpec(
        name="nightly",
        task_type="reports.nightly",
        schedule=schedule,
        payload=b"\x00\xffbinary",
        policies=mj.Policies(
            max_attempts=9,
            backoff_base=timedelta(seconds=2),
            backoff_cap=timedelta(minutes=7),
            idempotent=False,
            misfire=mj.MisfirePolicy.FIRE_ALL,
            misfire_grace=timedelta(seconds=90),
            misfire_replay_cap=12,
            overlap=mj.OverlapPolicy.QUEUE,
            timeout=timedelta(minutes=3),
            priority=-4,
            pool="gpu",
        ),
    )
    return mj.Job(
        id=JobId(uuid.uuid4()),
        tenant_id=TenantId(uuid.uuid4()),
        spec=spec,
        status=mj.JobStatus.PAUSED,
        version=12,
        partition=PartitionId(3),
        materialised_to=None,
        materialised_version=0,
        created_at=T0,
        updated_at=T0 + timedelta(hours=1),
    )


@pytest.mark.parametrize(
    "schedule",
    [
        wheel.now(),
        wheel.at(T0),
        wheel.cron(
            "H 1 * * *",
            "Europe/London",
            smear=timedelta(seconds=30),
            start=T0,
            end=T0 + timedelta(days=30),
            dst_gap="skip",
            dst_fold="both",
        ),
    ],
)
def test_a_job_reads_back_as_the_server_held_it(schedule: mj.Schedule) -> None:
    model = _model_job(schedule)
    job = messages.job(convert.job_to(model))
    assert job.id == model.id
    assert job.spec == model.spec
    assert (job.status, job.version) == (model.status, model.version)
    assert (job.created_at, job.updated_at) == (model.created_at, model.updated_at)


def test_an_execution_reads_back_with_its_attempts() -> None:
    key = ExecutionKey(JobId(uuid.uuid4()), T0)
    model = mx.Execution(
        key=key,
        tenant_id=TenantId(uuid.uuid4()),
        partition=PartitionId(1),
        job_version=4,
        status=mx.ExecutionStatus.NEEDS_REVIEW,
        fire_at=T0 + timedelta(seconds=12),
        attempt=2,
        fence=41,
        lease_until=None,
        executor_id="ex-1",
        priority=5,
        trigger=mx.Trigger.BACKFILL,
        reason=None,
        error="timeout",
        created_at=T0 - timedelta(minutes=5),
        started_at=T0 + timedelta(seconds=13),
        finished_at=T0 + timedelta(seconds=20),
        attempts=(
            mx.Attempt(1, 40, "ex-0", T0, T0 + timedelta(seconds=1), mx.Outcome.FAILED, "boom"),
            mx.Attempt(
                2, 41, None, None, T0 + timedelta(seconds=20), mx.Outcome.LEASE_EXPIRED, None
            ),
        ),
    )
    execution = messages.execution(convert.execution_to(model))
    assert execution.id == key.id
    assert execution.job_id == key.job_id
    assert execution.scheduled_for == key.scheduled_for
    for name in ("job_version", "status", "fire_at", "attempt", "fence", "executor_id",
                 "priority", "trigger", "reason", "error", "created_at", "started_at",
                 "finished_at"):  # fmt: skip
        assert getattr(execution, name) == getattr(model, name), name
    for got, want in zip(execution.attempts, model.attempts, strict=True):
        assert (got.number, got.fence, got.executor_id, got.started_at, got.finished_at,
                got.outcome, got.error) == (want.number, want.fence, want.executor_id,
                want.started_at, want.finished_at, want.outcome, want.error)  # fmt: skip


def test_a_next_run_reads_back() -> None:
    run = PreviewRun(T0, T0, "2027-03-28T00:30:00.123456+00:00", "Europe/London", None)
    assert messages.next_run(convert.next_run_to(run)).note is None
    noted = PreviewRun(T0, T0, "x", "Europe/London", "DST note")
    assert messages.next_run(convert.next_run_to(noted)).note == "DST note"


def test_every_verdict_of_the_protocol_is_known() -> None:
    for name, number in api.Explanation.Verdict.items():
        if number == api.Explanation.VERDICT_UNSPECIFIED:
            continue
        message = api.Explanation(job_id=str(uuid.uuid4()), verdict=number)
        assert messages.explanation(message).verdict is Verdict(name.lower())


def test_every_status_of_the_protocol_is_known() -> None:
    for name, number in pb.ExecutionStatus.items():
        if number == pb.EXECUTION_STATUS_UNSPECIFIED:
            continue
        message = pb.Execution(id="x", job_id=str(uuid.uuid4()), status=number, trigger="manual")
        assert messages.execution(message).status.name == name.removeprefix("EXECUTION_STATUS_")


def test_a_value_this_client_does_not_know_says_so() -> None:
    message = pb.Execution(id="x", job_id=str(uuid.uuid4()), status=99, trigger="manual")  # type: ignore[arg-type]
    with pytest.raises(RemoteError, match=r"execution\.status=99") as caught:
        messages.execution(message)
    assert caught.value.code is grpc.StatusCode.INTERNAL
    unknown_trigger = pb.Execution(
        id="x", job_id=str(uuid.uuid4()), status=pb.EXECUTION_STATUS_PENDING, trigger="cosmic ray"
    )
    with pytest.raises(RemoteError, match="upgrade wheel-scheduler"):
        messages.execution(unknown_trigger)


def test_import_wheel_stays_light_and_exports_the_sdk() -> None:
    import subprocess

    code = (
        "import sys, wheel; assert 'grpc' not in sys.modules, 'grpc'; "
        "wheel.Client; wheel.AsyncClient; wheel.cron; wheel.Policies; assert 'grpc' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert set(wheel.__all__) >= {"Client", "AsyncClient", "now", "at", "cron", "Policies"}
    for name in wheel.__all__:
        assert getattr(wheel, name) is not None


def test_plain_data_names_units_and_loses_nothing() -> None:
    model = _model_job(wheel.cron("0 9 * * *", "Europe/Paris", smear=timedelta(milliseconds=1500)))
    document = to_plain(messages.job(convert.job_to(model)))
    assert json.loads(json.dumps(document)) == document
    assert document["id"] == str(model.id)
    assert base64.b64decode(document["payload_base64"]) == model.spec.payload
    assert document["schedule"]["smear_s"] == 1.5
    assert document["schedule"]["dst_gap"] == "default"
    assert document["policies"]["backoff_cap_s"] == 420
    assert document["policies"]["misfire"] == "fire_all"
    assert datetime.fromisoformat(document["created_at"]) == T0
    assert list(document) == [
        "id", "name", "task_type", "payload_base64", "schedule", "policies", "status",
        "version", "created_at", "updated_at", "warnings", "last_run", "next_run_at", "http",
        "attention", "pause",
    ]  # fmt: skip
    assert document["http"] is None
