"""The lists say why a run is not running, in the word explain's verdict comes from, and
the Jobs list flags a job whose runs go nowhere (unserved), wait too long or keep failing."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import grpc

from tests.integration.api.helpers import Api, Caller, rpc_error
from tests.integration.scheduler.scripted_executor import connected
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.timestamps import to_timestamp

V = apb.Explanation


async def one_off(caller: Caller, seconds: float, task_type: str) -> pb.Job:
    at = datetime.now(UTC) + timedelta(seconds=seconds)
    request = apb.CreateJobRequest(
        name=f"one-off {uuid.uuid4().hex[:8]}", task_type=task_type,
        schedule=pb.Schedule(at=to_timestamp(at)),
    )  # fmt: skip
    return (await caller.jobs.CreateJob(request, metadata=caller.metadata)).job


async def runs_of(caller: Caller, job: pb.Job, *, due: bool = False) -> list[pb.Execution]:
    """The job's runs, newest first; `due`: those scheduled up to now (a frequent job's
    materialised future comes first otherwise)."""
    request = apb.ListExecutionsRequest(job_id=job.id)
    if due:
        request.scheduled_before.CopyFrom(to_timestamp(datetime.now(UTC) + timedelta(seconds=1)))
    page = await caller.executions.ListExecutions(request, metadata=caller.metadata)
    return list(page.executions)


async def until_waiting(caller: Caller, job: pb.Job, word: str, saying: str = "") -> pb.Execution:
    async with asyncio.timeout(20):
        while True:
            found = [
                e
                for e in await runs_of(caller, job, due=True)
                if e.waiting == word and saying in e.waiting_detail
            ]
            if found:
                return found[0]
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await


def reason(sentence: str) -> str:
    """A sentence without its "due 1.2 s ago; " (which moves on between two reads)."""
    return sentence.split("; ", 1)[-1]


async def test_an_unserved_run_says_so_in_the_list_and_explain_agrees(api: Api) -> None:
    a = api.alice
    executor = await connected(api.node, executor_id="others", task_types=("example.hello",))
    typo = await one_off(a, -0.5, "exmaple.hello")
    listed = await until_waiting(a, typo, "unserved")
    assert listed.status == pb.EXECUTION_STATUS_PENDING
    assert "no connected executor serves task type 'exmaple.hello'" in listed.waiting_detail
    explained = await a.executions.ExplainExecution(
        apb.ExplainExecutionRequest(execution_id=listed.id), metadata=a.metadata
    )
    assert explained.verdict == V.UNSERVED
    assert reason(explained.summary) == reason(listed.waiting_detail)
    got = await a.executions.GetExecution(apb.ExecutionRef(id=listed.id), metadata=a.metadata)
    assert got.waiting == "unserved"

    served = await one_off(a, -0.5, "example.hello")
    await executor.wait_for(lambda: len(executor.runs) == 1)
    (ran,) = await runs_of(a, served)
    assert (ran.waiting, ran.waiting_detail) == ("", ""), "only pending runs wait"

    page = await a.jobs.ListJobs(apb.ListJobsRequest(with_runs=True), metadata=a.metadata)
    by_id = {j.id: j for j in page.jobs}
    assert by_id[typo.id].attention.unserved == 1
    assert by_id[typo.id].attention.summary == "1 unserved"
    assert not by_id[served.id].HasField("attention")
    flagged = await a.jobs.ListJobs(
        apb.ListJobsRequest(needing_attention=True, count_attention=True), metadata=a.metadata
    )
    assert [j.id for j in flagged.jobs] == [typo.id]
    assert flagged.attention_count == 1
    theirs = await api.bob.jobs.ListJobs(
        apb.ListJobsRequest(count_attention=True), metadata=api.bob.metadata
    )
    assert theirs.attention_count == 0, "another tenant's runs are not counted"
    await executor.stop()


async def test_a_future_run_waits_and_a_paused_jobs_run_is_paused(api: Api) -> None:
    a = api.alice
    later = await one_off(a, 3600, "work")
    (run,) = await runs_of(a, later)
    assert run.waiting == "waiting"
    assert run.waiting_detail.startswith("fires at ")
    await a.jobs.PauseJob(apb.JobRef(id=later.id), metadata=a.metadata)
    (run,) = await runs_of(a, later)
    assert run.waiting == "paused"
    page = await a.jobs.ListJobs(apb.ListJobsRequest(with_runs=True), metadata=a.metadata)
    assert not page.jobs[0].HasField("attention"), "a paused job's runs wait by choice"


async def test_needing_attention_takes_no_page_token(api: Api) -> None:
    a = api.alice
    request = apb.ListJobsRequest(needing_attention=True, page_token="x")
    error = await rpc_error(a.jobs.ListJobs(request, metadata=a.metadata))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "page_token" in (error.details() or "")


async def test_a_run_behind_a_running_one_says_so_in_the_list_as_explain_does(api: Api) -> None:
    release = asyncio.Event()

    async def hold(_: object) -> tuple[int, str]:
        await release.wait()
        return 1, ""  # OUTCOME_SUCCEEDED

    executor = await connected(api.node, behaviour=hold)  # type: ignore[arg-type]
    a = api.alice
    request = apb.CreateJobRequest(
        name="queued", task_type="work",
        schedule=pb.Schedule(cron=pb.CronSchedule(expression="* * * * * *")),
        policies=pb.JobPolicies(overlap=pb.OVERLAP_QUEUE),
    )  # fmt: skip
    job = (await a.jobs.CreateJob(request, metadata=a.metadata)).job
    await executor.wait_for(lambda: len(executor.runs) == 1)
    running = executor.runs[0].execution_id
    # Once the held run is running (not just dispatched), the sentence holds still.
    behind = await until_waiting(a, job, "behind a running run", "(running on")
    assert f"waiting for run {running}" in behind.waiting_detail
    explained = await a.executions.ExplainExecution(
        apb.ExplainExecutionRequest(execution_id=behind.id), metadata=a.metadata
    )
    assert explained.verdict == V.BEHIND_RUNNING
    assert reason(explained.summary) == reason(behind.waiting_detail)
    release.set()
    await executor.stop()
