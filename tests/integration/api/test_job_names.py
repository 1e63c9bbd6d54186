"""Jobs by name: unique within a tenant, accepted wherever a job id is, freed by delete."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import grpc

from tests.integration.api.helpers import Api, create, cron, rpc_error
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.timestamps import to_timestamp


async def test_creating_a_name_again_with_the_same_definition_answers_the_first_job(
    api: Api,
) -> None:
    a = api.alice
    # As the SDK does: every create carries a fresh job id.
    first = await a.jobs.CreateJob(create("digest", job_id=str(uuid.uuid4())), metadata=a.metadata)
    again = await a.jobs.CreateJob(create("digest", job_id=str(uuid.uuid4())), metadata=a.metadata)
    assert again.job.id == first.job.id
    listed = await a.jobs.ListJobs(apb.ListJobsRequest(), metadata=a.metadata)
    assert [j.name for j in listed.jobs] == ["digest"]


async def test_a_name_taken_by_another_definition_is_already_exists_naming_the_field(
    api: Api,
) -> None:
    a = api.alice
    await a.jobs.CreateJob(create("digest"), metadata=a.metadata)
    other = create("digest", schedule=cron("0 9 * * 1"))
    error = await rpc_error(a.jobs.CreateJob(other, metadata=a.metadata))
    assert error.code() == grpc.StatusCode.ALREADY_EXISTS
    assert error.details().startswith("name: a job named 'digest' exists")
    listed = await a.jobs.ListJobs(apb.ListJobsRequest(), metadata=a.metadata)
    assert len(listed.jobs) == 1, "nothing was written"
    # Another tenant's names are its own.
    b = api.bob
    assert (await b.jobs.CreateJob(other, metadata=b.metadata)).job.name == "digest"


async def test_every_job_call_takes_a_name(api: Api) -> None:
    a = api.alice
    job = (await a.jobs.CreateJob(create("nightly-report"), metadata=a.metadata)).job
    ref = apb.JobRef(id="nightly-report")
    assert (
        await a.jobs.GetJob(apb.GetJobRequest(id="nightly-report"), metadata=a.metadata)
    ).id == job.id
    assert (await a.jobs.PauseJob(ref, metadata=a.metadata)).status == pb.JOB_STATUS_PAUSED
    assert (await a.jobs.ResumeJob(ref, metadata=a.metadata)).status == pb.JOB_STATUS_ACTIVE
    now = datetime.now(UTC).replace(microsecond=0)
    run = await a.jobs.TriggerJob(
        apb.TriggerJobRequest(id="nightly-report", at=to_timestamp(now)), metadata=a.metadata
    )
    assert run.job_id == job.id
    listed = await a.executions.ListExecutions(
        apb.ListExecutionsRequest(job_id="nightly-report"), metadata=a.metadata
    )
    assert [e.id for e in listed.executions] == [run.id]
    explained = await a.executions.ExplainExecution(
        apb.ExplainExecutionRequest(
            occurrence=apb.JobInstant(job_id="nightly-report", instant=to_timestamp(now))
        ),
        metadata=a.metadata,
    )
    assert explained.execution_id == run.id
    edited = pb.Job(**{**_fields(job), "id": "nightly-report", "name": "nightly"})
    updated = await a.jobs.UpdateJob(apb.UpdateJobRequest(job=edited), metadata=a.metadata)
    assert (updated.id, updated.name) == (job.id, "nightly")
    error = await rpc_error(
        a.jobs.GetJob(apb.GetJobRequest(id="nightly-report"), metadata=a.metadata)
    )
    assert error.code() == grpc.StatusCode.NOT_FOUND, "the old name is free"
    assert (await a.jobs.DeleteJob(apb.JobRef(id="nightly"), metadata=a.metadata)).id == job.id
    # A deleted job frees its name: another definition may take it.
    made = await a.jobs.CreateJob(
        create("nightly", schedule=cron("0 9 * * *")), metadata=a.metadata
    )
    assert made.job.id != job.id


async def test_renaming_into_a_taken_name_is_refused(api: Api) -> None:
    a = api.alice
    await a.jobs.CreateJob(create("first"), metadata=a.metadata)
    second = (await a.jobs.CreateJob(create("second"), metadata=a.metadata)).job
    edited = pb.Job(**{**_fields(second), "name": "first"})
    error = await rpc_error(a.jobs.UpdateJob(apb.UpdateJobRequest(job=edited), metadata=a.metadata))
    assert error.code() == grpc.StatusCode.ALREADY_EXISTS
    assert error.details().startswith("job.name: a job named 'first' exists")
    got = await a.jobs.GetJob(apb.GetJobRequest(id=second.id), metadata=a.metadata)
    assert (got.name, got.version) == ("second", second.version), "unchanged"


async def test_another_tenants_name_is_not_found_and_a_uuid_is_no_name(api: Api) -> None:
    a, b = api.alice, api.bob
    await a.jobs.CreateJob(create("alices"), metadata=a.metadata)
    error = await rpc_error(b.jobs.GetJob(apb.GetJobRequest(id="alices"), metadata=b.metadata))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    error = await rpc_error(a.jobs.CreateJob(create(str(uuid.uuid4())), metadata=a.metadata))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details().startswith("name: must not be a UUID")


async def test_a_batch_answers_names_like_single_creates(api: Api) -> None:
    a = api.alice
    first = (await a.jobs.CreateJob(create("kept"), metadata=a.metadata)).job
    again = await a.jobs.CreateJobs(
        apb.CreateJobsRequest(jobs=[create("kept"), create("fresh")]), metadata=a.metadata
    )
    assert again.jobs[0].id == first.id
    assert list(again.existed) == [0]
    clash = apb.CreateJobsRequest(
        jobs=[create("new-one"), create("kept", schedule=cron("0 9 * * *"))]
    )
    error = await rpc_error(a.jobs.CreateJobs(clash, metadata=a.metadata))
    assert error.code() == grpc.StatusCode.ALREADY_EXISTS
    assert error.details().startswith("jobs[1].name: a job named 'kept' exists")
    missing = await rpc_error(a.jobs.GetJob(apb.GetJobRequest(id="new-one"), metadata=a.metadata))
    assert missing.code() == grpc.StatusCode.NOT_FOUND, "the batch wrote nothing"


async def test_a_one_off_created_twice_by_name_runs_once(api: Api) -> None:
    a = api.alice
    at = pb.Schedule(at=to_timestamp(datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)))
    first = (await a.jobs.CreateJob(create("once", schedule=at), metadata=a.metadata)).job
    await a.jobs.CreateJob(create("once", schedule=at), metadata=a.metadata)
    runs = await a.executions.ListExecutions(
        apb.ListExecutionsRequest(job_id=first.id), metadata=a.metadata
    )
    assert len(runs.executions) == 1


def _fields(job: pb.Job) -> dict[str, object]:
    return {
        "id": job.id, "name": job.name, "task_type": job.task_type, "payload": job.payload,
        "schedule": job.schedule, "policies": job.policies, "version": job.version,
    }  # fmt: skip
