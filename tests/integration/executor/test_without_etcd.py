"""Executors that hold no etcd setting: they learn the cluster from the nodes (WatchCluster)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.helpers import at, create_job, status, tenant
from tests.probes import probe, probe_until
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel._proto.wheel.v1 import executor_pb2_grpc as pb_grpc
from wheel.executor.config import ExecutorConfig
from wheel.executor.context import TaskContext
from wheel.executor.executor import Executor
from wheel.executor.tasks import TaskRegistry
from wheel.model.executions import ExecutionStatus
from wheel.model.jobs import Job
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

UNUSED_ETCD = "http://127.0.0.1:1"
"""Nothing listens here: an executor that reached for etcd would never start."""


async def until(condition: Callable[[], bool], within: float = 30.0) -> None:
    async with asyncio.timeout(within):
        while True:
            if condition():
                return
            await asyncio.sleep(0.05)  # another component's state: there is no event


async def succeeded(store: Store, job: Job) -> None:
    assert job.spec.schedule.at is not None
    async with asyncio.timeout(30):
        while True:
            if await status(store, job, job.spec.schedule.at) is ExecutionStatus.SUCCEEDED:
                return
            await asyncio.sleep(0.1)  # polling the store: the nodes work on their own


@pytest.fixture
async def nodes(start_node: NodeFactory) -> list[SchedulerNode]:
    started = [await start_node("node-a"), await start_node("node-b")]
    for node in started:
        await node.ready.wait()
    return started


async def without_etcd(store: Store, nodes: list[SchedulerNode], **overrides: Any) -> Executor:
    """An executor told of the first node only, with a task named "work"."""
    registry = TaskRegistry()

    @registry.task("work")
    async def work(context: TaskContext) -> None:
        pass

    return Executor(
        ExecutorConfig(
            executor_id=f"no-etcd-{uuid.uuid4().hex[:6]}",
            nodes=(nodes[0].address,),  # one seed: the feed names the other node
            etcd_endpoint=UNUSED_ETCD,
            pools={"default": 8},
            token=(await store.tenants.create_executor_token("no-etcd"))[1],
            reconnect_max_s=0.5,
            **overrides,
        ),
        registry,
    )


@pytest.fixture
async def executor(store: Store, nodes: list[SchedulerNode]) -> AsyncIterator[Executor]:
    running = await without_etcd(store, nodes)
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def test_an_executor_given_one_node_streams_to_every_node_and_runs_work(
    store: Store, nodes: list[SchedulerNode], executor: Executor
) -> None:
    assert executor.discovery is not None
    discovery = executor.discovery
    await until(lambda: set(discovery.links) == {n.node_id for n in nodes})
    await until(lambda: all(link.stream is not None for link in discovery.links.values()))
    assert executor.registration is None  # nothing of it is in etcd
    owner = await tenant(store)
    for job in [await create_job(store, owner, at(0.5 + n / 10)) for n in range(6)]:
        await succeeded(store, job)


async def test_when_its_seed_node_stops_it_goes_on_with_the_other(
    store: Store, nodes: list[SchedulerNode], executor: Executor
) -> None:
    assert executor.discovery is not None
    discovery = executor.discovery
    await until(lambda: set(discovery.links) == {n.node_id for n in nodes})
    seed, other = nodes
    await seed.stop()
    # The feed moves to the node the last map listed; the gone node's link is dropped.
    await until(lambda: set(discovery.links) == {other.node_id})
    await until(lambda: len(other.engine.owned) == other.config.partitions)
    owner = await tenant(store)
    await succeeded(store, await create_job(store, owner, at(0.5)))


async def test_the_map_names_every_node_and_each_partitions_owner(
    store: Store, nodes: list[SchedulerNode]
) -> None:
    _, token = await store.tenants.create_executor_token("map-reader")
    async with grpc.aio.insecure_channel(nodes[1].address) as channel:
        stream = pb_grpc.ExecutorStreamStub(channel).WatchCluster(
            pb.WatchClusterRequest(), metadata=(("authorization", f"Bearer {token}"),)
        )
        async with asyncio.timeout(30):
            async for cluster in stream:
                owners = set(cluster.owners)
                held = sum(len(n.engine.owned) for n in nodes)
                if "" not in owners and held == cluster.partitions:
                    break
        stream.cancel()
    assert {(n.node_id, n.address) for n in cluster.nodes} == {
        (n.node_id, n.address) for n in nodes
    }
    assert cluster.partitions == nodes[0].config.partitions
    for partition, owner in enumerate(cluster.owners):
        holder = next(n for n in nodes if n.node_id == owner)
        assert partition in holder.engine.owned


@pytest.mark.parametrize("who", ["nobody", "a tenant"])
async def test_the_map_is_only_for_executor_tokens(
    store: Store, nodes: list[SchedulerNode], who: str
) -> None:
    metadata: tuple[tuple[str, str], ...] = ()
    if who == "a tenant":
        owner = await tenant(store)
        _, secret = await store.tenants.create_token(owner.id, "not an executor")
        metadata = (("authorization", f"Bearer {secret}"),)
    async with grpc.aio.insecure_channel(nodes[0].address) as channel:
        stream = pb_grpc.ExecutorStreamStub(channel).WatchCluster(
            pb.WatchClusterRequest(), metadata=metadata
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await anext(aiter(stream))
    expected = (
        grpc.StatusCode.UNAUTHENTICATED if who == "nobody" else grpc.StatusCode.PERMISSION_DENIED
    )
    assert refused.value.code() is expected


async def test_an_executor_is_ready_while_a_stream_to_a_node_is_open(
    store: Store, nodes: list[SchedulerNode]
) -> None:
    running = await without_etcd(store, nodes, metrics_listen="127.0.0.1:0")
    await running.start()
    try:
        address = f"127.0.0.1:{running.metrics_port}"
        ready = (200, "ok\n")
        await probe_until(address, "/readyz", lambda *answer: answer == ready)
        for node in nodes:
            await node.stop()
        _, why = await probe_until(address, "/readyz", lambda code, _: code == 503)
        assert why.startswith("no stream open to a node"), why
        assert await asyncio.to_thread(probe, address, "/livez") == ready
    finally:
        await running.stop()
