"""A real node serving the public API, two tenants with tokens, and raw gRPC stubs.

The stubs are grpcio's generated ones, not the SDK: these tests pin the
server's behaviour on the wire.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from tests.integration.conftest import NodeFactory
from wheel._proto.wheel.v1 import api_pb2_grpc
from wheel.model.tenants import Tenant
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

Metadata = tuple[tuple[str, str], ...]


@dataclass
class Caller:
    """One tenant's view of the API: its stubs carry its token."""

    tenant: Tenant
    token: str
    jobs: api_pb2_grpc.JobsStub
    executions: api_pb2_grpc.ExecutionsStub
    cluster: api_pb2_grpc.ClusterStub

    @property
    def metadata(self) -> Metadata:
        return (("authorization", f"Bearer {self.token}"),)

    def on(self, channel: grpc.aio.Channel) -> Caller:
        """The same tenant, calling through another channel (another node)."""
        return Caller(self.tenant, self.token, *_stubs(channel))


@dataclass
class Api:
    node: SchedulerNode
    store: Store
    channel: grpc.aio.Channel
    alice: Caller
    bob: Caller

    def stubs(self) -> tuple[api_pb2_grpc.JobsStub, api_pb2_grpc.ExecutionsStub]:
        return api_pb2_grpc.JobsStub(self.channel), api_pb2_grpc.ExecutionsStub(self.channel)


async def caller(store: Store, channel: grpc.aio.Channel, name: str) -> Caller:
    tenant = await store.tenants.create(name)
    _, token = await store.tenants.create_token(tenant.id, "test")
    return Caller(tenant, token, *_stubs(channel))


def _stubs(
    channel: grpc.aio.Channel,
) -> tuple[api_pb2_grpc.JobsStub, api_pb2_grpc.ExecutionsStub, api_pb2_grpc.ClusterStub]:
    return (
        api_pb2_grpc.JobsStub(channel),
        api_pb2_grpc.ExecutionsStub(channel),
        api_pb2_grpc.ClusterStub(channel),
    )


@contextlib.asynccontextmanager
async def serving(store: Store, start_node: NodeFactory, **overrides: Any) -> AsyncIterator[Api]:
    """A node (with these SchedulerConfig overrides) serving the API, and its two callers."""
    node = await start_node(**overrides)
    await node.ready.wait()
    async with grpc.aio.insecure_channel(node.address) as channel:
        yield Api(
            node,
            store,
            channel,
            await caller(store, channel, "alice"),
            await caller(store, channel, "bob"),
        )


@pytest.fixture
async def api(store: Store, start_node: NodeFactory) -> AsyncIterator[Api]:
    async with serving(store, start_node) as served:
        yield served
