"""Calling a real node's public API as a tenant: stubs with a token, and a node with two tenants."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import grpc
import pytest

from tests.integration.nodes import NodeFactory
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import api_pb2_grpc
from wheel._proto.wheel.v1 import common_pb2 as pb
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


def cron(expression: str, zone: str = "UTC", **fields: object) -> pb.Schedule:
    return pb.Schedule(cron=pb.CronSchedule(expression=expression, time_zone=zone, **fields))  # type: ignore[arg-type]


def create(
    name: str = "nightly", schedule: pb.Schedule | None = None, **fields: object
) -> apb.CreateJobRequest:
    return apb.CreateJobRequest(
        name=name,
        task_type=str(fields.pop("task_type", "report")),
        schedule=schedule or cron("30 1 * * *", "Europe/London"),
        **fields,  # type: ignore[arg-type]
    )


async def rpc_error(call: object) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    return caught.value


def next_spring_forward(zone: str, after: datetime) -> date:
    """The first day after `after` on which `zone`'s clocks go forward."""
    tz = ZoneInfo(zone)
    day = after.date() + timedelta(days=1)
    while True:
        noon, next_noon = (datetime.combine(d, time(12), tz) for d in (day, day + timedelta(1)))
        offset, next_offset = noon.utcoffset(), next_noon.utcoffset()
        assert offset is not None
        assert next_offset is not None
        if next_offset > offset:
            return day + timedelta(days=1)
        day += timedelta(days=1)
