"""The SDK's two deadlines against a real node: `timeout_s` for each try (a slow answer
raises DeadlineExceeded, not retried) and `deadline_s` for the whole call, retries and
backoff included; `with_options` changes them for a call over the same channels."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest

import wheel
from wheel.client import AsyncClient
from wheel.errors import ConfigError, DeadlineExceeded, Unavailable
from wheel.scheduler.node import SchedulerNode


@pytest.fixture
def swallowing() -> Iterator[str]:
    """An address that accepts TCP connections and never speaks: a try waits out its timeout."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
async def client(node: SchedulerNode, token: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(node.address, token=token) as opened:
        yield opened


@pytest.fixture
async def jobs_locked(database_dsn: str) -> AsyncIterator[None]:
    """The jobs table locked by another transaction: the node's reads of it wait."""
    async with (
        await psycopg.AsyncConnection.connect(database_dsn) as connection,
        connection.transaction(),
    ):
        await connection.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
        yield


async def test_a_slow_answer_raises_deadline_exceeded_after_timeout_s(
    client: AsyncClient, jobs_locked: None
) -> None:
    hurried = client.with_options(timeout_s=0.5)
    with pytest.raises(DeadlineExceeded) as caught:
        await hurried.list_jobs()
    assert "did not answer within timeout_s=0.5" in str(caught.value)
    assert isinstance(caught.value, Unavailable), "callers catching Unavailable still do"


async def test_deadline_s_bounds_the_call_and_its_retries(
    node: SchedulerNode, token: str, swallowing: str
) -> None:
    # Each try would wait 5 s and 20 tries are allowed; the call must end at its deadline.
    async with AsyncClient(
        [swallowing], token=token, timeout_s=5, retries=20, deadline_s=1.5
    ) as bounded:
        with pytest.raises(DeadlineExceeded) as caught:
            await bounded.list_jobs()
    assert "no answer within deadline_s=1.5" in str(caught.value)
    assert swallowing in str(caught.value)


async def test_with_options_shares_the_channels_and_leaves_them_open(
    client: AsyncClient, swallowing: str, token: str
) -> None:
    created = await client.create_job("deadlines", "t", wheel.cron("0 6 * * *"))
    derived = client.with_options(deadline_s=5, retries=1)
    assert (await derived.get_job("deadlines")).id == created.job.id
    await derived.close()
    assert (await client.get_job("deadlines")).id == created.job.id, "the parent still works"
    for bad, field in [({"timeout_s": 0}, "timeout_s"), ({"deadline_s": -1}, "deadline_s"),
                       ({"retries": -1}, "retries")]:  # fmt: skip
        with pytest.raises(ConfigError) as refused:
            client.with_options(**bad)  # type: ignore[arg-type]
        assert refused.value.field == field


async def test_the_blocking_client_has_the_same_options(node: SchedulerNode, token: str) -> None:
    def use() -> None:
        with wheel.Client(node.address, token=token, deadline_s=10) as client:
            client.create_job("blocking", "t", wheel.cron("0 6 * * *"))
            with client.with_options(timeout_s=2) as derived:
                assert derived.get_job("blocking").name == "blocking"
            assert client.get_job("blocking").name == "blocking", "closing it left the parent"

    # In a thread: the node answers on this test's event loop.
    await asyncio.to_thread(use)
