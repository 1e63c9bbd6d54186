"""A node's gRPC health (what a readiness probe asks) and reflection."""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tests.integration.nodes import NodeFactory, fast_config
from tests.integration.scheduler.helpers import at, create_job, scrape, status, tenant
from tests.integration.scheduler.scripted_executor import connected
from tests.probes import probe, probe_until
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.errors import StoreUnavailable
from wheel.local import LocalServices
from wheel.model.executions import ExecutionStatus
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store, migrate

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def test_serving_once_ready_and_not_while_its_clock_is_off(start_node: NodeFactory) -> None:
    node = await start_node()
    async with grpc.aio.insecure_channel(node.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        await node.ready.wait()
        assert (await stub.Check(health_pb2.HealthCheckRequest())).status == SERVING
    unfit = await start_node("node-b", max_clock_offset_ms=0.000001)
    async with grpc.aio.insecure_channel(unfit.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        assert (await stub.Check(health_pb2.HealthCheckRequest())).status == NOT_SERVING


async def test_reflection_lists_the_services(start_node: NodeFactory) -> None:
    node = await start_node()
    async with grpc.aio.insecure_channel(node.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        responses = stub.ServerReflectionInfo(iter([request]))
        (response,) = [r async for r in responses]
    names = {s.name for s in response.list_services_response.service}
    assert {"wheel.v1.ExecutorStream", "grpc.health.v1.Health"} <= names


async def _status_becomes(
    stub: health_pb2_grpc.HealthStub, wanted: int, node: SchedulerNode, what: str
) -> None:
    try:
        async with asyncio.timeout(60):
            async for reply in stub.Watch(health_pb2.HealthCheckRequest()):
                if reply.status == wanted:
                    return
    except TimeoutError:
        membership = node.membership
        ownership = membership.ownership if membership else None
        held = sorted(ownership.held) if ownership else None
        healthy = (ownership.healthy, ownership.failures) if ownership else None
        state = (node.ready.is_set(), node.clock_fit.is_set(), healthy, held)
        raise AssertionError(f"{what}: not {wanted} within 60 s; node state {state}") from None


async def test_not_serving_while_it_cannot_take_the_partitions_it_should_own(
    start_node: NodeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node whose reconciliation keeps failing must not look healthy: nobody else
    takes the partitions rendezvous hashing gives it."""
    node = await start_node("node-a", metrics_listen="127.0.0.1:0")
    other = await start_node("node-b")
    await node.ready.wait()
    await other.ready.wait()
    ready = (200, "ok\n")

    async def refuse(*args: object, **kwargs: object) -> object:
        raise StoreUnavailable("Postgres is away (test)")

    monkeypatch.setattr(node.store.occurrences, "set_epochs", refuse)
    async with grpc.aio.insecure_channel(node.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        await _status_becomes(stub, SERVING, node, "with both nodes up")
        await probe_until(node.metrics_address, "/readyz", lambda *answer: answer == ready)
        await other.stop()  # node-a should now take node-b's partitions, and cannot
        await _status_becomes(stub, NOT_SERVING, node, "unable to take node-b's share")
        _, why = await probe_until(node.metrics_address, "/readyz", lambda code, _: code == 503)
        assert why == f"{node.not_serving_reason}\n"
        assert "partition ownership cannot be reconciled" in why
        assert await asyncio.to_thread(probe, node.metrics_address, "/livez") == ready
        monkeypatch.undo()
        await _status_becomes(stub, SERVING, node, "once it can")
        await probe_until(node.metrics_address, "/readyz", lambda *answer: answer == ready)
    assert node.engine is not None
    assert len(node.engine.owned) == node.config.partitions


async def test_not_serving_while_ready_runs_wait_on_an_executor_that_does_not_answer(
    start_node: NodeFactory, store: Store
) -> None:
    """The executor lets a lease lapse in silence and answers no probe: its runs pile up
    although it holds credit, so the node is not serving, and says why; once it answers,
    they go to it and the node serves again."""
    # A 1 s heartbeat interval: the lease (2 s) lapses before the executor has been silent
    # for the four intervals that would have it let go (it holds a run until then).
    node = await start_node(
        dispatch_stall_s=2.0, heartbeat_interval_s=1.0, metrics_listen="127.0.0.1:0"
    )
    hung = asyncio.Event()

    async def first_hangs(dispatch: pb.Dispatch) -> tuple[int, str]:
        if not hung.is_set():
            hung.set()
            await asyncio.Event().wait()  # silent for good: no heartbeat, no result
        return pb.Result.OUTCOME_SUCCEEDED, ""

    executor = await connected(
        node, behaviour=first_hangs, heartbeat_every_s=None, answers_pings=False
    )
    owner = await tenant(store)
    first = await create_job(store, owner, at(1), max_attempts=1)
    async with grpc.aio.insecure_channel(node.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        await _status_becomes(stub, SERVING, node, "joined")
        await hung.wait()
        await executor.wait_for(lambda: bool(node.engine.links.held_back()))  # lease lapsed
        piled = [await create_job(store, owner, at(0)) for _ in range(3)]
        await _status_becomes(stub, NOT_SERVING, node, "runs wait on a silent executor")
        reason = node.not_serving_reason or ""
        assert "dispatch stalled in pool 'default': 3 runs ready" in reason, reason
        assert "held back after a lapsed lease, not answering: scripted" in reason, reason
        samples = await asyncio.to_thread(scrape, node.metrics_address)
        assert samples["wheel_dispatch_stalled{}"] == 1
        assert samples["wheel_executors_held_back{}"] == 1
        assert samples["wheel_ready_oldest_age_seconds{pool=default}"] >= 2.0
        executor.answers_pings = True  # the next probe is answered
        await _status_becomes(stub, SERVING, node, "once it answers")
    await executor.wait_for(lambda: len(executor.accepted) == 3)  # the piled runs, done
    assert first.spec.schedule.at is not None
    assert await status(store, first, first.spec.schedule.at) is ExecutionStatus.DEAD
    for job in piled:
        assert job.spec.schedule.at is not None
        assert await status(store, job, job.spec.schedule.at) is ExecutionStatus.SUCCEEDED


async def test_probes_answer_before_the_node_waits_and_mirror_its_health(
    local_services: LocalServices, empty_database: str, cluster: str
) -> None:
    """A node on a database still waiting for its migration is alive and not ready, and
    says why; once migrated it becomes ready exactly when its gRPC health says SERVING; a
    stopping node is not ready; a stopped one closes the port."""
    config = SchedulerConfig(
        node_id="node-a", postgres_dsn=empty_database,
        etcd_endpoint=f"127.0.0.1:{local_services.etcd.port}", cluster=cluster,
        **fast_config(metrics_listen="127.0.0.1:0"),
    )  # fmt: skip
    node = SchedulerNode(config)
    starting = asyncio.create_task(node.start())
    try:
        await asyncio.sleep(0)  # the port is bound before the first wait
        address = node.metrics_address
        assert await asyncio.to_thread(probe, address, "/livez") == (200, "ok\n")
        _, why = await probe_until(address, "/readyz", lambda code, body: "missing" in body)
        assert why.startswith("run `wheel migrate` (or the migration Job): missing 0001_"), why
        assert not starting.done()
        await migrate(empty_database)
        await starting
        async with grpc.aio.insecure_channel(node.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            await _status_becomes(stub, SERVING, node, "migrated")
            await probe_until(address, "/readyz", lambda code, body: (code, body) == (200, "ok\n"))
    finally:
        if not starting.done():
            starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting
        await node.stop()
    assert node.probes.readiness() == "stopping: handing its partitions over"
    code, _ = await asyncio.to_thread(probe, address, "/readyz")
    assert code == 0, "a stopped node's port is closed"
