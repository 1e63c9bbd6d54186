"""Several endpoints: safe calls move on to the next when one is unavailable, others do not."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator

import grpc
import pytest

import wheel
from tests.unit.client.fake_api import NOW, FakeApi
from tests.unit.client.helpers import TOKEN, seed_job
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.client import AsyncClient, messages
from wheel.errors import Unavailable, WheelError


@pytest.fixture
def refusing() -> Iterator[str]:
    """An address where nothing listens: connections are refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # held, never listening: no one else can take the port
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def swallowing() -> Iterator[str]:
    """An address that accepts TCP connections and never speaks: gRPC never gets READY."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"127.0.0.1:{sock.getsockname()[1]}"


async def test_unavailable_moves_a_read_to_the_next_endpoint(
    address: str, second_address: str, api: FakeApi, second_api: FakeApi
) -> None:
    job = seed_job(second_api)
    api.fail("GetJob", grpc.StatusCode.UNAVAILABLE)
    async with AsyncClient([address, second_address], token=TOKEN) as client:
        assert (await client.get_job(job.id)).name == job.name
        # The endpoint that answered stays current.
        await client.nodes()
    assert len(api.called("GetJob")) == 1
    assert len(second_api.called("GetJob")) == 1
    assert api.called("ListNodes") == []
    assert len(second_api.called("ListNodes")) == 1
    assert second_api.calls[0].metadata["authorization"] == f"Bearer {TOKEN}"


async def test_a_refused_connection_fails_over(refusing: str, address: str, api: FakeApi) -> None:
    async with AsyncClient(f"{refusing},{address}", timeout_s=5) as client:
        assert len(await client.nodes()) == 1
    assert len(api.called("ListNodes")) == 1


async def test_an_endpoint_that_never_connects_fails_over(
    swallowing: str, address: str, api: FakeApi
) -> None:
    async with AsyncClient([swallowing, address], timeout_s=0.3) as client:
        assert len(await client.partitions()) == 2
    assert len(api.called("ListPartitions")) == 1


async def test_a_repeated_create_sends_the_same_job_id(
    address: str, second_address: str, api: FakeApi, second_api: FakeApi
) -> None:
    api.fail("CreateJob", grpc.StatusCode.UNAVAILABLE)
    async with AsyncClient([address, second_address]) as client:
        created = await client.create_job("once", "t", wheel.now())
    first = api.called("CreateJob")[0].request
    second = second_api.called("CreateJob")[0].request
    assert first.job_id == second.job_id == str(created.job.id)


async def test_a_repeated_trigger_sends_the_same_instant(
    address: str, second_address: str, api: FakeApi, second_api: FakeApi
) -> None:
    job = seed_job(second_api)
    api.fail("TriggerJob", grpc.StatusCode.UNAVAILABLE)
    async with AsyncClient([address, second_address]) as client:
        execution = await client.trigger_job(job.id)
    first = api.called("TriggerJob")[0].request
    second = second_api.called("TriggerJob")[0].request
    assert first.at == second.at
    assert execution.id.endswith(second.at.ToDatetime().strftime("%Y%m%dT%H%M%S.%fZ"))


async def test_update_is_not_retried(
    address: str, second_address: str, api: FakeApi, second_api: FakeApi
) -> None:
    job = messages.job(seed_job(api))
    api.fail("UpdateJob", grpc.StatusCode.UNAVAILABLE)
    async with AsyncClient([address, second_address], retries=3) as client:
        with pytest.raises(Unavailable, match="not safe to repeat"):
            await client.update_job(job.id, expected_version=job.version, base=job, name="x")
        # Later calls start at the next endpoint.
        await client.nodes()
    assert len(api.called("UpdateJob")) == 1
    assert second_api.called("UpdateJob") == []
    assert len(second_api.called("ListNodes")) == 1


async def test_retry_execution_is_not_retried(
    address: str, second_address: str, api: FakeApi, second_api: FakeApi
) -> None:
    job = seed_job(api)
    dead = api.add_execution(job.id, NOW, pb.EXECUTION_STATUS_DEAD)
    api.fail("RetryExecution", grpc.StatusCode.UNAVAILABLE)
    async with AsyncClient([address, second_address]) as client:
        with pytest.raises(Unavailable):
            await client.retry_execution(dead.id)
    assert len(api.called("RetryExecution")) == 1
    assert second_api.called("RetryExecution") == []


async def test_retries_run_out_into_unavailable(address: str, refusing: str, api: FakeApi) -> None:
    api.fail("ListExecutors", grpc.StatusCode.UNAVAILABLE, times=10)
    async with AsyncClient([address, refusing], retries=2) as client:
        with pytest.raises(Unavailable) as caught:
            await client.executors()
    message = str(caught.value)
    assert "in 3 tries" in message
    assert address in message
    assert refusing in message
    assert len(api.called("ListExecutors")) == 2  # tries 1 and 3; try 2 was refused


async def test_other_errors_are_not_retried(
    address: str, second_address: str, api: FakeApi, second_api: FakeApi
) -> None:
    api.fail("GetJob", grpc.StatusCode.INTERNAL)
    async with AsyncClient([address, second_address]) as client:
        with pytest.raises(WheelError, match="INTERNAL"):
            await client.get_job(uuid.uuid4())
    assert second_api.calls == []
