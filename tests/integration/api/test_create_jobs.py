"""wheel.v1.Jobs/CreateJobs on a real node: many jobs in one call, all or none, repeatable."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import grpc

from tests.integration.api.helpers import Api, create, cron, rpc_error
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.model.ids import JobId
from wheel.timestamps import to_timestamp


def one_offs(
    count: int, *, after_s: float = 3600, named: str = "remind"
) -> list[apb.CreateJobRequest]:
    at = datetime.now(UTC) + timedelta(seconds=after_s)
    return [
        create(f"{named}-{n}", pb.Schedule(at=to_timestamp(at + timedelta(seconds=n))),
               job_id=str(uuid.uuid4()), payload=f"user {n}".encode())
        for n in range(count)
    ]  # fmt: skip


async def pending_of(api: Api, job_ids: list[str]) -> int:
    async with api.store.pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM executions WHERE job_id = ANY(%s::uuid[])", (job_ids,)
        )
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def test_a_batch_makes_every_job_and_each_one_off_its_occurrence(api: Api) -> None:
    a = api.alice
    batch = [*one_offs(300), create("nightly", cron("30 1 * * *", "Europe/London"))]
    answer = await a.jobs.CreateJobs(apb.CreateJobsRequest(jobs=batch), metadata=a.metadata)
    assert [j.name for j in answer.jobs] == [j.name for j in batch], "in the order asked"
    assert [j.id for j in answer.jobs[:300]] == [j.job_id for j in batch[:300]]
    assert answer.jobs[300].id, "a job without an id gets one"
    assert list(answer.existed) == []
    assert all(j.payload == b"" for j in answer.jobs), "payloads are not echoed"
    assert await pending_of(api, [j.job_id for j in batch[:300]]) == 300
    stored = await api.store.jobs.get(a.tenant.id, JobId(uuid.UUID(answer.jobs[7].id)))
    assert stored.spec.payload == b"user 7"


async def test_a_repeated_batch_makes_nothing_twice(api: Api) -> None:
    a = api.alice
    batch = one_offs(50)
    first = await a.jobs.CreateJobs(apb.CreateJobsRequest(jobs=batch), metadata=a.metadata)
    grown = [*batch, *one_offs(5, after_s=7200, named="later")]  # a retry, with more appended
    again = await a.jobs.CreateJobs(apb.CreateJobsRequest(jobs=grown), metadata=a.metadata)
    assert [j.id for j in again.jobs[:50]] == [j.id for j in first.jobs]
    assert list(again.existed) == list(range(50))
    assert await pending_of(api, [j.job_id for j in grown]) == 55, "one occurrence each"


async def test_one_bad_job_writes_nothing_and_is_named(api: Api) -> None:
    a = api.alice
    batch = one_offs(20)
    batch[13].schedule.CopyFrom(cron("61 * * * *"))
    refused = await rpc_error(
        a.jobs.CreateJobs(apb.CreateJobsRequest(jobs=batch), metadata=a.metadata)
    )
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert dict(refused.trailing_metadata() or ())["wheel-field"] == (
        "jobs[13].schedule.cron.expression"
    )
    assert await pending_of(api, [j.job_id for j in batch]) == 0
    listed = await a.jobs.ListJobs(apb.ListJobsRequest(), metadata=a.metadata)
    assert list(listed.jobs) == []


async def test_ids_taken_by_another_definition_or_tenant_refuse_the_batch(api: Api) -> None:
    a, b = api.alice, api.bob
    theirs = one_offs(1)
    await b.jobs.CreateJobs(apb.CreateJobsRequest(jobs=theirs), metadata=b.metadata)
    batch = one_offs(3)
    batch[2].job_id = theirs[0].job_id
    taken = await rpc_error(
        a.jobs.CreateJobs(apb.CreateJobsRequest(jobs=batch), metadata=a.metadata)
    )
    assert taken.code() == grpc.StatusCode.ALREADY_EXISTS
    assert "jobs[2].job_id" in (taken.details() or "")
    assert "bob" not in (taken.details() or ""), "nothing about the other tenant's job"

    await a.jobs.CreateJobs(apb.CreateJobsRequest(jobs=batch[:2]), metadata=a.metadata)
    renamed = apb.CreateJobRequest()
    renamed.CopyFrom(batch[1])
    renamed.name = "renamed"
    changed = await rpc_error(
        a.jobs.CreateJobs(apb.CreateJobsRequest(jobs=[batch[0], renamed]), metadata=a.metadata)
    )
    assert changed.code() == grpc.StatusCode.ALREADY_EXISTS
    assert "jobs[1].job_id" in (changed.details() or "")


async def test_a_batch_is_bounded_and_its_ids_distinct(api: Api) -> None:
    a = api.alice
    empty = await rpc_error(a.jobs.CreateJobs(apb.CreateJobsRequest(), metadata=a.metadata))
    assert empty.code() == grpc.StatusCode.INVALID_ARGUMENT
    twice = one_offs(3)
    twice[2].job_id = twice[0].job_id
    repeated = await rpc_error(
        a.jobs.CreateJobs(apb.CreateJobsRequest(jobs=twice), metadata=a.metadata)
    )
    assert dict(repeated.trailing_metadata() or ())["wheel-field"] == "jobs[2].job_id"
    assert "repeats jobs[0].job_id" in (repeated.details() or "")
    huge = [create(f"j{n}") for n in range(10_001)]
    refused = await rpc_error(
        a.jobs.CreateJobs(apb.CreateJobsRequest(jobs=huge), metadata=a.metadata)
    )
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "more than 10000" in (refused.details() or "")
