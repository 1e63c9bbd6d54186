"""A node given a certificate serves TLS only: the API and the executor stream both."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest

from tests.integration.api.helpers import caller
from tests.integration.nodes import NodeFactory
from tests.tls_material import make_tls_files
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.executor.config import ExecutorConfig
from wheel.executor.context import TaskContext
from wheel.executor.executor import Executor
from wheel.executor.tasks import TaskRegistry
from wheel.local import LocalServices
from wheel.store import Store
from wheel.timestamps import to_timestamp


async def test_api_and_executors_speak_tls_to_a_node_with_a_certificate(
    store: Store, start_node: NodeFactory, local_services: LocalServices, tmp_path: Path
) -> None:
    tls = make_tls_files(tmp_path)
    node = await start_node(tls_cert_file=str(tls.cert), tls_key_file=str(tls.key))
    await node.ready.wait()
    port = node.address.rsplit(":", 1)[1]
    address = f"localhost:{port}"  # the name the certificate is for

    ran = asyncio.Event()
    registry = TaskRegistry()

    @registry.task("secure")
    async def secure(context: TaskContext) -> None:
        ran.set()

    executor = Executor(
        ExecutorConfig(
            executor_id=f"tls-{uuid.uuid4().hex[:6]}",
            cluster=node.config.cluster,
            etcd_endpoint=local_services.etcd.endpoint,
            pools={"default": 2},
            token=(await store.tenants.create_executor_token("tls"))[1],
            tls=True,
            tls_ca_file=str(tls.ca),
        ),
        registry,
    )
    await executor.start()
    credentials = grpc.ssl_channel_credentials(root_certificates=tls.ca.read_bytes())
    try:
        async with grpc.aio.secure_channel(address, credentials) as channel:
            alice = await caller(store, channel, "alice")
            at = to_timestamp(datetime.now(UTC) + timedelta(seconds=0.5))
            request = apb.CreateJobRequest(
                name="over tls", task_type="secure", schedule=pb.Schedule(at=at)
            )
            await alice.jobs.CreateJob(request, metadata=alice.metadata)
            async with asyncio.timeout(20):
                await ran.wait()
        async with grpc.aio.insecure_channel(address) as plain:
            bob = await caller(store, plain, "bob")
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await bob.jobs.ListJobs(apb.ListJobsRequest(), metadata=bob.metadata, timeout=5)
            assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
    finally:
        await executor.stop()
