"""Trust on the executor stream: who may open it, who may report a run, what bad input gets.

Only executors' tokens open the stream (it carries every tenant's payloads);
a token names the executor ids it may use; one id is one process; a run is
reported only by the executor process it was dispatched to; a revoked token
ends its open streams; garbage is INVALID_ARGUMENT, never internals.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.scripted_executor import ScriptedExecutor, connected
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel._proto.wheel.v1 import executor_pb2_grpc as pb_grpc
from wheel.api.server.registration import register_job
from wheel.model.ids import ExecutionKey, new_job_id
from wheel.model.jobs import JobSpec, Schedule, ScheduleKind
from wheel.scheduler.messages import NOT_YOURS
from wheel.store import Store


def hello(executor_id: str = "pool-a", **fields: Any) -> pb.ExecutorMessage:
    settings: dict[str, Any] = {"pools": ["default"], "capacity": 1, "instance_id": "i-1"}
    settings.update(fields)
    return pb.ExecutorMessage(hello=pb.Hello(executor_id=executor_id, **settings))


async def first_answer(
    address: str, token: str | None, first: pb.ExecutorMessage | bytes | None = None
) -> pb.SchedulerMessage:
    """The node's first message on a stream opened with `first` (default: a good hello)."""
    metadata = (("authorization", f"Bearer {token}"),) if token else None
    sent = first if first is not None else hello()
    raw = sent if isinstance(sent, bytes) else sent.SerializeToString()

    async def messages() -> AsyncIterator[bytes]:
        yield raw

    async with grpc.aio.insecure_channel(address) as channel:
        connect = channel.stream_stream(
            "/wheel.v1.ExecutorStream/Connect",
            request_serializer=None,
            response_deserializer=pb.SchedulerMessage.FromString,
        )
        call = connect(messages(), metadata=metadata)
        async for message in call:
            call.cancel()
            return message  # type: ignore[no-any-return]
    raise AssertionError("the stream ended without a word")


async def refused_with(address: str, token: str | None, first: Any = None) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await first_answer(address, token, first)
    return refused.value


async def test_the_stream_wants_a_live_executor_token(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node(token_cache_s=0.0)
    owner = await store.tenants.create("acme")
    _, tenants_token = await store.tenants.create_token(owner.id, "api")
    info, executors_token = await store.tenants.create_executor_token("pool-a")
    assert info.tenant_id is None

    welcome = await first_answer(node.address, executors_token)
    assert welcome.WhichOneof("body") == "welcome"

    refusals = {
        None: grpc.StatusCode.UNAUTHENTICATED,
        "whl_made_up": grpc.StatusCode.UNAUTHENTICATED,
        tenants_token: grpc.StatusCode.PERMISSION_DENIED,
    }
    for token, code in refusals.items():
        assert (await refused_with(node.address, token)).code() is code, token

    await store.tenants.revoke_token(info.id)
    revoked = await refused_with(node.address, executors_token)
    assert revoked.code() is grpc.StatusCode.UNAUTHENTICATED
    assert await store.tenants.authenticate(executors_token) is None, "no tenant's token either"


async def test_a_token_admits_only_the_executor_ids_it_names(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    _, token = await store.tenants.create_executor_token("wheel-executor")
    for allowed in ("wheel-executor", "wheel-executor-7d9f-abc"):
        answer = await first_answer(node.address, token, hello(allowed))
        assert answer.WhichOneof("body") == "welcome"
    denied = await refused_with(node.address, token, hello("billing-executor"))
    assert denied.code() is grpc.StatusCode.PERMISSION_DENIED
    assert "'billing-executor' is not one this executor token allows" in (denied.details() or "")


async def test_one_executor_id_cannot_be_taken_by_a_second_process(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    first = await connected(node, executor_id="ex-a")
    twin = ScriptedExecutor(node.address, executor_id="ex-a", token=first.token)
    await twin.start()
    await twin.wait_for(lambda: twin.ended is not None)
    assert twin.ended is not None
    assert twin.ended.code() is grpc.StatusCode.ALREADY_EXISTS
    assert first.ended is None, "the first keeps its stream"
    await twin.stop()
    await first.stop()


async def test_only_the_executor_a_run_was_dispatched_to_may_report_it(
    store: Store, start_node: NodeFactory
) -> None:
    """An intruder with a valid executor token, the run's id and its current fence can
    neither settle the run nor keep it leased; refusals go back to it and are counted."""
    node = await start_node()
    release = asyncio.Event()

    async def hold(_: pb.Dispatch) -> tuple[int, str]:
        await release.wait()
        return pb.Result.OUTCOME_SUCCEEDED, ""

    owner_executor = await connected(node, executor_id="owner", behaviour=hold)
    owner = await store.tenants.create(f"t-{new_job_id().hex[:8]}")
    when = (datetime.now(UTC) + timedelta(seconds=1)).replace(microsecond=0)
    spec = JobSpec("held", "work", Schedule(kind=ScheduleKind.AT, at=when))
    job = (await register_job(store, owner.id, spec, partitions=node.config.partitions)).job
    await owner_executor.wait_for(lambda: len(owner_executor.runs) == 1)
    (run,) = owner_executor.runs
    intruder = await connected(node, executor_id="intruder")
    intruder.send_result(run.execution_id, run.fence, pb.Result.OUTCOME_SUCCEEDED)
    intruder.heartbeat(run.execution_id, run.fence)
    await intruder.wait_for(lambda: len(intruder.refusals) == 2)
    reasons = sorted(r.reason for r in intruder.refusals)
    assert reasons == ["", NOT_YOURS]
    assert all(r.current_fence == 0 for r in intruder.refusals), "nothing about the run is told"
    key = ExecutionKey.parse(run.execution_id)
    execution = await store.executions.get(owner.id, key)
    assert (execution.status.value, execution.executor_id) in {
        ("dispatched", "owner"),
        ("running", "owner"),
    }
    assert execution.attempts == ()
    assert node.engine is not None
    assert node.engine.stats.refused["result.not_yours"] == 1
    assert node.engine.stats.refused["heartbeat.refused"] == 1

    release.set()
    await owner_executor.wait_for(lambda: len(owner_executor.accepted) == 1)
    done = await store.executions.get(owner.id, key)
    assert (done.status.value, done.executor_id) == ("succeeded", "owner")
    assert [a.executor_id for a in done.attempts] == ["owner"]
    assert job.id == key.job_id
    await intruder.stop()
    await owner_executor.stop()


async def test_revoking_a_token_ends_the_streams_it_opened(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node(token_cache_s=0.5)
    info, token = await store.tenants.create_executor_token("ex", executor_ids=("*",))
    executor = await connected(node, executor_id="ex-1", token=token)
    await store.tenants.revoke_token(info.id)
    await executor.wait_for(lambda: executor.ended is not None, within=10)
    assert executor.ended is not None
    assert executor.ended.code() is grpc.StatusCode.UNAUTHENTICATED
    assert node.engine is not None
    assert [link.executor_id for link in node.engine.links] == []
    await executor.stop()


@pytest.mark.parametrize(
    ("first", "field"),
    [
        (b"\xff\xff\xff\xff garbage", "message 1"),
        (hello("x" * 1_000_000), "hello.executor_id"),
        (hello("bad\nid"), "hello.executor_id"),
        (hello(instance_id=""), "hello.instance_id"),
        (hello(pools=[]), "hello.pools"),
        (hello(pools=["default", "default"]), "hello.pools"),
        (hello(task_types=["t" * 201]), "hello.task_types[0]"),
        (hello(task_types=["report", "wheel.http:hooks.example.com"]), "hello.task_types"),
        (hello(capacity=0), "hello.capacity"),
        (pb.ExecutorMessage(credit=pb.Credit(pool="default", count=1)), "hello"),
    ],
)
async def test_bad_input_is_invalid_argument_without_internals(
    store: Store, start_node: NodeFactory, first: pb.ExecutorMessage | bytes, field: str
) -> None:
    node = await start_node()
    _, token = await store.tenants.create_executor_token("pool-a", executor_ids=("*",))
    refused = await refused_with(node.address, token, first)
    assert refused.code() is grpc.StatusCode.INVALID_ARGUMENT
    details = refused.details() or ""
    assert field in details
    assert "Traceback" not in details
    assert "DecodeError" not in details
    assert len(details) < 300, "a megabyte of input does not come back"
    assert node.engine is not None
    assert len(node.engine.links) == 0


async def _read_to_the_end(call: Any) -> None:
    while await call.read() is not grpc.aio.EOF:
        continue


async def test_garbage_after_hello_ends_the_stream_as_invalid_argument(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    _, token = await store.tenants.create_executor_token("pool-a", executor_ids=("*",))
    metadata = (("authorization", f"Bearer {token}"),)
    sent = asyncio.Event()

    async def messages() -> AsyncIterator[bytes]:
        yield hello().SerializeToString()
        await sent.wait()
        yield b"\x0a\xff\xff\xff\xff\xff"
        await asyncio.Event().wait()

    async with grpc.aio.insecure_channel(node.address) as channel:
        connect = channel.stream_stream(
            "/wheel.v1.ExecutorStream/Connect",
            request_serializer=None,
            response_deserializer=pb.SchedulerMessage.FromString,
        )
        call = connect(messages(), metadata=metadata)
        first = await call.read()
        assert isinstance(first, pb.SchedulerMessage)
        assert first.WhichOneof("body") == "welcome"
        sent.set()
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            await _read_to_the_end(call)
    assert ended.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "message 2 on the stream is not a wheel.v1.ExecutorMessage" in (
        ended.value.details() or ""
    )


async def test_credit_for_a_pool_the_hello_did_not_name_is_refused(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    _, token = await store.tenants.create_executor_token("pool-a", executor_ids=("*",))
    metadata = (("authorization", f"Bearer {token}"),)

    async def messages() -> AsyncIterator[pb.ExecutorMessage]:
        yield hello()
        yield pb.ExecutorMessage(credit=pb.Credit(pool="not-mine", count=5))
        await asyncio.Event().wait()

    async with grpc.aio.insecure_channel(node.address) as channel:
        call = pb_grpc.ExecutorStreamStub(channel).Connect(messages(), metadata=metadata)
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            async for _ in call:
                pass
    assert ended.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "credit.pool" in (ended.value.details() or "")
