"""Pause with a note on a real node: the note, who paused (the token's name) and when are in
every answer that returns the job (gRPC, the JSON gateway, the SDK, the CLI), the paused
runs' list word and explain say them in one sentence, resume clears them, a bad note is
refused naming `note`, and another tenant neither sees nor pauses the job."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC

import aiohttp
import grpc
import pytest
from click.testing import CliRunner

from tests.integration.api.explaining import explain, one_off
from tests.integration.api.helpers import Api, Caller, rpc_error, serving
from tests.integration.nodes import NodeFactory
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.cli.jobs import jobs
from wheel.client import AsyncClient, Client
from wheel.errors import InvalidArgument
from wheel.model.jobs import JobStatus
from wheel.store import Store

V = apb.Explanation
NOTE = "vendor outage, INC-123"


@pytest.fixture
async def api(store: Store, start_node: NodeFactory) -> AsyncIterator[Api]:
    async with serving(store, start_node, http_listen="127.0.0.1:0") as served:
        yield served


async def _oncall(api: Api) -> Caller:
    """Alice's tenant through a token named "ops-oncall": the name a pause records."""
    _, secret = await api.store.tenants.create_token(api.alice.tenant.id, "ops-oncall")
    a = api.alice
    return Caller(a.tenant, secret, a.jobs, a.executions, a.cluster)


async def _pending_run(caller: Caller, job: pb.Job) -> pb.Execution:
    request = apb.ListExecutionsRequest(job_id=job.id)
    (run,) = (await caller.executions.ListExecutions(request, metadata=caller.metadata)).executions
    return run


async def test_a_note_who_and_when_reach_every_answer_and_resume_clears_them(api: Api) -> None:
    oncall = await _oncall(api)
    job = await one_off(api.alice, -0.5)  # due, and no executor: it stays pending
    paused = await oncall.jobs.PauseJob(
        apb.PauseJobRequest(id=job.id, note=NOTE), metadata=oncall.metadata
    )
    assert (paused.status, paused.pause_note, paused.paused_by) == (
        pb.JOB_STATUS_PAUSED, NOTE, "ops-oncall"
    )  # fmt: skip
    at = paused.paused_at.ToDatetime(UTC)
    # The database's clock stamps it: the same clock as updated_at, in the same statement.
    assert paused.paused_at == paused.updated_at

    got = await api.alice.jobs.GetJob(apb.GetJobRequest(id=job.name), metadata=api.alice.metadata)
    listed = await api.alice.jobs.ListJobs(
        apb.ListJobsRequest(with_runs=True), metadata=api.alice.metadata
    )
    for answer in (got, *[j for j in listed.jobs if j.id == job.id]):
        assert (answer.pause_note, answer.paused_by, answer.paused_at) == (
            NOTE, "ops-oncall", paused.paused_at
        )  # fmt: skip

    # The run's word in the list and explain's verdict say the same sentence.
    run = await _pending_run(api.alice, job)
    stamp = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    said = (
        f"its job was paused by ops-oncall at {stamp}: {NOTE}; "
        "it runs (or the misfire policy decides) on resume"
    )
    assert (run.waiting, run.waiting_detail) == ("paused", said)
    explained = await explain(api.alice, job)
    assert (explained.verdict, explained.summary) == (V.PAUSED, said)
    steps = {step.what: step for step in explained.steps}
    assert steps["paused"].detail == f"its job was paused by ops-oncall at {stamp}: {NOTE}"
    assert steps["paused"].at == paused.paused_at

    # Pausing again with the same note keeps who and when; another note replaces them.
    again = await api.alice.jobs.PauseJob(
        apb.PauseJobRequest(id=job.id, note=NOTE), metadata=api.alice.metadata
    )
    assert (again.paused_by, again.paused_at) == ("ops-oncall", paused.paused_at)
    other = await api.alice.jobs.PauseJob(
        apb.PauseJobRequest(id=job.id, note="still down"), metadata=api.alice.metadata
    )
    assert (other.pause_note, other.paused_by) == ("still down", "test")

    resumed = await api.alice.jobs.ResumeJob(apb.JobRef(id=job.id), metadata=api.alice.metadata)
    assert resumed.status == pb.JOB_STATUS_ACTIVE
    for name in ("pause_note", "paused_by"):
        assert getattr(resumed, name) == ""
    assert not resumed.HasField("paused_at")
    got = await api.alice.jobs.GetJob(apb.GetJobRequest(id=job.id), metadata=api.alice.metadata)
    assert (got.pause_note, got.paused_by, got.HasField("paused_at")) == ("", "", False)
    assert (await _pending_run(api.alice, job)).waiting != "paused"


async def test_an_old_client_that_sends_a_job_ref_still_pauses(api: Api) -> None:
    job = await one_off(api.alice, 3600)
    old = api.channel.unary_unary(
        "/wheel.v1.Jobs/PauseJob",
        request_serializer=apb.JobRef.SerializeToString,
        response_deserializer=pb.Job.FromString,
    )
    paused = await old(apb.JobRef(id=job.id), metadata=api.alice.metadata)
    assert (paused.status, paused.pause_note, paused.paused_by) == (
        pb.JOB_STATUS_PAUSED,
        "",
        "test",
    )


async def test_a_bad_note_is_refused_naming_it_and_nothing_is_written(api: Api) -> None:
    a = api.alice
    job = await one_off(a, 3600)
    for bad in ("two\nlines", "x" * 501, "nul\x00"):
        error = await rpc_error(
            a.jobs.PauseJob(apb.PauseJobRequest(id=job.id, note=bad), metadata=a.metadata)
        )
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (error.details() or "").startswith("note: ")
    got = await a.jobs.GetJob(apb.GetJobRequest(id=job.id), metadata=a.metadata)
    assert (got.status, got.pause_note) == (pb.JOB_STATUS_ACTIVE, "")


async def test_another_tenant_neither_sees_nor_pauses_the_job(api: Api) -> None:
    a, b = api.alice, api.bob
    job = await one_off(a, 3600)
    await a.jobs.PauseJob(apb.PauseJobRequest(id=job.id, note=NOTE), metadata=a.metadata)
    for ref in (job.id, job.name):
        for call in (
            b.jobs.PauseJob(apb.PauseJobRequest(id=ref, note="mine"), metadata=b.metadata),
            b.jobs.GetJob(apb.GetJobRequest(id=ref), metadata=b.metadata),
        ):
            assert (await rpc_error(call)).code() == grpc.StatusCode.NOT_FOUND
    theirs = await b.jobs.ListJobs(apb.ListJobsRequest(), metadata=b.metadata)
    assert job.id not in [j.id for j in theirs.jobs]
    got = await a.jobs.GetJob(apb.GetJobRequest(id=job.id), metadata=a.metadata)
    assert (got.pause_note, got.paused_by) == (NOTE, "test"), "bob changed nothing"


async def test_the_json_gateway_pauses_with_a_note_and_answers_it(api: Api) -> None:
    job = await one_off(api.alice, 3600)
    headers = {"Authorization": f"Bearer {api.alice.token}", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(f"http://{api.node.dashboard_address}") as http:
        body = json.dumps({"id": job.name, "note": NOTE})
        async with http.post("/wheel.v1.Jobs/PauseJob", data=body, headers=headers) as answer:
            assert answer.status == 200, await answer.text()
            paused = await answer.json()
        async with http.post(
            "/wheel.v1.Jobs/GetJob", data=json.dumps({"id": job.id}), headers=headers
        ) as answer:
            got = await answer.json()
        bad = json.dumps({"id": job.id, "note": "a\nb"})
        async with http.post("/wheel.v1.Jobs/PauseJob", data=bad, headers=headers) as answer:
            assert answer.status == 400
            assert (await answer.json())["message"].startswith("note: ")
    for document in (paused, got):
        assert (document["status"], document["pauseNote"], document["pausedBy"]) == (
            "JOB_STATUS_PAUSED", NOTE, "test"
        )  # fmt: skip
        assert document["pausedAt"].endswith("Z")


async def test_the_sdk_and_the_cli_pause_with_a_note_and_show_it(api: Api) -> None:
    oncall = await _oncall(api)
    first = await one_off(api.alice, 3600)
    second = await one_off(api.alice, 3600)
    async with AsyncClient(api.node.address, token=oncall.token) as client:
        paused = await client.pause_job(first.name, note=NOTE)
        assert paused.status is JobStatus.PAUSED
        assert paused.pause is not None
        assert (paused.pause.note, paused.pause.by) == (NOTE, "ops-oncall")
        assert (await client.get_job(first.id)).pause == paused.pause
        listed = {job.id: job async for job in client.jobs()}
        assert listed[paused.id].pause == paused.pause
        with pytest.raises(InvalidArgument) as refused:
            await client.pause_job(first.id, note="two\nlines")
        assert refused.value.field == "note"
        assert (await client.resume_job(first.id)).pause is None

    def blocking() -> tuple[str, str]:
        with Client(api.node.address, token=oncall.token) as sync:
            done = sync.pause_job(second.id, note="sync")
            assert done.pause is not None
            assert (done.pause.note, done.pause.by) == ("sync", "ops-oncall")
        env = {"WHEEL_ENDPOINTS": api.node.address, "WHEEL_TOKEN": oncall.token, "COLUMNS": "250"}
        result = CliRunner().invoke(jobs, ["pause", first.name, "--note", NOTE], env=env)
        assert result.exit_code == 0, result.output
        listing = CliRunner().invoke(jobs, ["list"], env=env)
        assert listing.exit_code == 0, listing.output
        return result.stdout, listing.stdout

    # The node serves from this test's loop: the blocking client and CLI run in a thread.
    shown, listing = await asyncio.to_thread(blocking)
    ago = r"(just now|\d+ s ago)"  # by the reader's clock, however long the calls took
    assert re.search(f"paused by ops-oncall {ago}: {NOTE}", shown)
    assert re.search(f"paused by ops-oncall {ago}: {NOTE}", listing)
    assert re.search(f"paused by ops-oncall {ago}: sync", listing)
