"""Asking the API why a run did (not) run: a one-off job, explain, and waiting for a verdict."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from tests.integration.api.helpers import Caller
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.timestamps import to_timestamp

V = apb.Explanation


async def one_off(caller: Caller, seconds: float, **policies: object) -> pb.Job:
    at = datetime.now(UTC) + timedelta(seconds=seconds)
    request = apb.CreateJobRequest(
        name=f"one-off {uuid.uuid4().hex[:8]}",  # names are unique per tenant
        task_type=str(policies.pop("task_type", "work")),
        schedule=pb.Schedule(at=to_timestamp(at)),
        policies=pb.JobPolicies(**policies),  # type: ignore[arg-type]
    )
    return (await caller.jobs.CreateJob(request, metadata=caller.metadata)).job


async def explain(caller: Caller, job: pb.Job, instant: datetime | None = None) -> apb.Explanation:
    if instant is None:
        instant = job.schedule.at.ToDatetime(UTC)
    request = apb.ExplainExecutionRequest(
        occurrence=apb.JobInstant(job_id=job.id, instant=to_timestamp(instant))
    )
    return await caller.executions.ExplainExecution(request, metadata=caller.metadata)


async def until_verdict(
    caller: Caller, job: pb.Job, verdict: int, within: float = 20.0
) -> apb.Explanation:
    """Explain until the verdict is reached: the node works asynchronously."""
    async with asyncio.timeout(within):
        while True:
            found = await explain(caller, job)
            if found.verdict == verdict:
                return found
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await
