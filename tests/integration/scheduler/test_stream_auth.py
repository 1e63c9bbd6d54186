"""Only executors' tokens open the executor stream: it carries every tenant's payloads."""

from __future__ import annotations

import grpc
import pytest

from tests.integration.conftest import NodeFactory
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel._proto.wheel.v1 import executor_pb2_grpc as pb_grpc
from wheel.store import Store


async def first_answer(address: str, token: str | None) -> pb.SchedulerMessage:
    metadata = (("authorization", f"Bearer {token}"),) if token else None
    hello = pb.ExecutorMessage(hello=pb.Hello(executor_id="x", pools=["default"], capacity=1))

    async def messages():  # type: ignore[no-untyped-def]
        yield hello

    async with grpc.aio.insecure_channel(address) as channel:
        call = pb_grpc.ExecutorStreamStub(channel).Connect(messages(), metadata=metadata)
        async for message in call:
            call.cancel()
            return message
    raise AssertionError("the stream ended without a word")


async def test_the_stream_wants_a_live_executor_token(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node(token_cache_s=0.0)
    tenant = await store.tenants.create("acme")
    _, tenants_token = await store.tenants.create_token(tenant.id, "api")
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
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await first_answer(node.address, token)
        assert refused.value.code() is code, token

    await store.tenants.revoke_token(info.id)
    with pytest.raises(grpc.aio.AioRpcError) as revoked:
        await first_answer(node.address, executors_token)
    assert revoked.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert await store.tenants.authenticate(executors_token) is None, "no tenant's token either"
