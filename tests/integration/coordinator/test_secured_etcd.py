"""wheel against an etcd that wants TLS, a client certificate and a password: it works, keeps
working past its token's life, and each wrong setting is an error naming that setting."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.integration.coordinator.secured_etcd import (
    PASSWORD,
    TOKEN_TTL_S,
    SecuredEtcd,
    secured_etcd,
)
from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.helpers import at, create_job, status, tenant
from tests.tls_material import Authority
from wheel.coordinator.etcd import Etcd
from wheel.errors import ConfigError
from wheel.executor.config import ExecutorConfig
from wheel.executor.context import TaskContext
from wheel.executor.executor import Executor
from wheel.executor.tasks import TaskRegistry
from wheel.model.executions import ExecutionStatus
from wheel.store import Store


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[SecuredEtcd]:
    async with secured_etcd(tmp_path) as running:
        yield running


async def test_keys_leases_and_watches_work_over_tls_with_a_user(secured: SecuredEtcd) -> None:
    etcd = await Etcd.connect(secured.settings())
    try:
        lease = await etcd.grant(10)
        created = await etcd.create("/secured/a", b"1", lease=lease)
        assert created is not None
        found = await etcd.get("/secured/a")
        assert found is not None
        assert (found.value, found.create_revision, found.lease) == (b"1", created, lease)
        assert await etcd.create("/secured/a", b"2", lease=lease) is None
        assert 0 < await etcd.keep_alive(lease) <= 10
        changes = etcd.watch_prefix("/secured/", created + 1)
        await etcd.put("/secured/b", b"2")
        change = await anext(changes)
        assert (change.kv.key, change.kv.value, change.deleted) == ("/secured/b", b"2", False)
        await changes.aclose()
        listed, revision = await etcd.get_prefix("/secured/")
        assert [kv.key for kv in listed] == ["/secured/a", "/secured/b"]
        assert revision >= change.revision
    finally:
        await etcd.close()


async def test_nodes_and_an_executor_run_work_through_a_secured_etcd(
    secured: SecuredEtcd, store: Store, start_node: NodeFactory, tmp_path: Path
) -> None:
    password_file = tmp_path / "etcd-password"
    password_file.write_text(PASSWORD + "\n")  # as a mounted Secret holds it
    tls = {
        "etcd_endpoint": f"127.0.0.1:1,{secured.endpoint}",  # the first is down: fail over
        "etcd_ca_file": str(secured.authority.path),
        "etcd_cert_file": str(secured.client_cert),
        "etcd_key_file": str(secured.client_key),
        "etcd_user": "root",
    }
    first = await start_node("node-a", etcd_password_file=str(password_file), **tls)
    second = await start_node("node-b", etcd_password=PASSWORD, **tls)
    for node in (first, second):
        await node.ready.wait()
    async with asyncio.timeout(30):
        while True:  # the second node's share moves over within a few ownership rounds
            held = [len(node.engine.owned) for node in (first, second)]
            if sum(held) == first.config.partitions and all(held):
                break
            await asyncio.sleep(0.1)  # polling the nodes' ownership: nothing to await
    ran: set[str] = set()
    registry = TaskRegistry()

    @registry.task("secured")
    async def secured_task(context: TaskContext) -> None:
        ran.add(context.execution_id)

    # A real executor: it finds the nodes through the same secured etcd.
    executor = Executor(
        ExecutorConfig(
            executor_id="secured-executor",
            cluster=first.config.cluster,
            etcd_endpoint=secured.endpoint,
            etcd_ca_file=str(secured.authority.path),
            etcd_cert_file=str(secured.client_cert),
            etcd_key_file=str(secured.client_key),
            etcd_user="root",
            etcd_password=PASSWORD,
            pools={"default": 4},
            token=(await store.tenants.create_executor_token("secured"))[1],
        ),
        registry,
    )
    await executor.start()
    try:
        owner = await tenant(store)
        jobs = [
            await create_job(store, owner, at(1.0 + n / 10), task_type="secured") for n in range(6)
        ]
        for job in jobs:
            assert job.spec.schedule.at is not None
            async with asyncio.timeout(30):
                while True:
                    if await status(store, job, job.spec.schedule.at) is ExecutionStatus.SUCCEEDED:
                        break
                    await asyncio.sleep(0.1)  # polling the store: the nodes work on their own
        assert len(ran) == len(jobs)
    finally:
        await executor.stop()


async def test_a_call_after_the_token_expired_logs_in_again(secured: SecuredEtcd) -> None:
    etcd = await Etcd.connect(secured.settings())
    try:
        await etcd.put("/secured/t", b"before")
        await asyncio.sleep(TOKEN_TTL_S + 1.5)  # the token's life is a span of etcd's clock
        await etcd.put("/secured/t", b"after")
        found = await etcd.get("/secured/t")
        assert found is not None
        assert found.value == b"after"
    finally:
        await etcd.close()


async def test_a_wrong_password_names_the_password(secured: SecuredEtcd) -> None:
    with pytest.raises(ConfigError, match="etcd refused user 'root'") as caught:
        await Etcd.connect(secured.settings(password="wrong"))
    assert caught.value.field == "etcd_password"


async def test_no_user_where_etcd_wants_one_names_the_user(secured: SecuredEtcd) -> None:
    with pytest.raises(ConfigError) as caught:
        await Etcd.connect(secured.settings(user="", password=""))
    assert caught.value.field == "etcd_user"


async def test_a_ca_that_did_not_sign_etcds_certificate_names_the_ca(
    secured: SecuredEtcd, tmp_path: Path
) -> None:
    stranger = Authority.make(tmp_path, "another CA")
    with pytest.raises(ConfigError, match="not signed by a CA this process trusts") as caught:
        await Etcd.connect(secured.settings(ca_file=str(stranger.path)))
    assert caught.value.field == "etcd_ca_file"


async def test_an_expired_client_certificate_names_the_certificate(
    secured: SecuredEtcd, tmp_path: Path
) -> None:
    cert, key = secured.authority.issue(
        tmp_path, "expired", valid=timedelta(days=1), ago=timedelta(days=2)
    )
    with pytest.raises(ConfigError) as caught:
        await Etcd.connect(secured.settings(cert_file=str(cert), key_file=str(key)))
    assert caught.value.field == "etcd_cert_file"


async def test_a_certificate_from_another_ca_names_the_certificate(
    secured: SecuredEtcd, tmp_path: Path
) -> None:
    stranger = Authority.make(tmp_path, "rogue CA")
    cert, key = stranger.issue(tmp_path, "rogue")
    with pytest.raises(ConfigError) as caught:
        await Etcd.connect(secured.settings(cert_file=str(cert), key_file=str(key)))
    assert caught.value.field == "etcd_cert_file"


async def test_wheel_shards_reads_a_secured_etcd_from_its_settings(
    secured: SecuredEtcd, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from wheel.cli.main import cli

    password = tmp_path / "password"
    password.write_text(PASSWORD)
    env = {
        "WHEEL_ETCD_ENDPOINT": secured.endpoint,
        "WHEEL_ETCD_CA_FILE": str(secured.authority.path),
        "WHEEL_ETCD_CERT_FILE": str(secured.client_cert),
        "WHEEL_ETCD_KEY_FILE": str(secured.client_key),
        "WHEEL_ETCD_USER": "root",
    }

    def shards(*args: str, **extra: str) -> tuple[int, str]:
        done = CliRunner().invoke(cli, ["shards", "--cluster", "nobody-here", *args],
                                  env={**env, **extra})  # fmt: skip
        # The `wheel` entry point prints a WheelError; invoked directly, it is the exception.
        return done.exit_code, done.output + str(done.exception or "")

    # It got through TLS and the login: the answer is about the cluster, not the connection.
    code, out = await asyncio.to_thread(shards, "--etcd-password-file", str(password))
    assert (code, "no node is in cluster 'nobody-here'" in out) == (1, True), out
    code, out = await asyncio.to_thread(shards, WHEEL_ETCD_PASSWORD=PASSWORD)
    assert "no node is in cluster" in out, out
    code, out = await asyncio.to_thread(shards, WHEEL_ETCD_PASSWORD="wrong")
    assert (code, "etcd_password: etcd refused user 'root'" in out) == (1, True), out
