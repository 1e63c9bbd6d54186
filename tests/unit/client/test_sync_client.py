"""wheel.Client: AsyncClient's methods on a private loop, from any thread."""

from __future__ import annotations

import asyncio
import inspect
import threading

import grpc
import pytest

import wheel
from tests.unit.client.fake_api import FakeApi
from tests.unit.client.helpers import TOKEN, seed_job
from wheel.client import AsyncClient, Client, messages
from wheel.errors import NotFound, Unavailable
from wheel.model.jobs import JobStatus


def test_from_plain_sync_code(address: str, api: FakeApi) -> None:
    seeded = [seed_job(api, f"job {n}") for n in range(3)]
    with Client(address, token=TOKEN) as client:
        job = client.get_job(seeded[0].id)
        assert job.name == "job 0"
        assert client.pause_job(job.id).status is JobStatus.PAUSED
        assert [item.name for item in client.jobs(page_size=2)] == ["job 0", "job 1", "job 2"]
        created = client.create_job("hello", "examples.hello", wheel.now())
        assert created.job.name == "hello"
    assert {call.metadata["authorization"] for call in api.calls} == {f"Bearer {TOKEN}"}


async def test_from_inside_a_running_event_loop(address: str, api: FakeApi) -> None:
    asyncio.get_running_loop()  # this test's thread runs a loop, as Jupyter's does
    job = seed_job(api)
    with Client(address) as client:
        assert client.get_job(job.id).id == messages.job(job).id
        with pytest.raises(NotFound):
            client.get_job("8c8f7d7e-51a4-4f44-9a43-0b0ebb3a8e5f")


def test_errors_and_failover_are_the_async_clients(
    address: str, second_address: str, api: FakeApi, second_api: FakeApi
) -> None:
    api.fail("ListNodes", grpc.StatusCode.UNAVAILABLE)
    second_api.fail("ListNodes", grpc.StatusCode.UNAVAILABLE, times=5)
    with Client([address, second_address], retries=1) as client:
        with pytest.raises(Unavailable, match="in 2 tries"):
            client.nodes()
        assert client.endpoints == (address, second_address)


def test_from_several_threads_at_once(address: str, api: FakeApi) -> None:
    job = seed_job(api)
    names: list[str] = []
    with Client(address) as client:

        def read() -> None:
            names.append(client.get_job(job.id).name)

        threads = [threading.Thread(target=read) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert names == [job.name] * 4


def test_an_iteration_stopped_early_is_closed(address: str, api: FakeApi) -> None:
    for n in range(3):
        seed_job(api, f"job {n}")
    with Client(address) as client:
        iterator = client.jobs(page_size=1)
        assert next(iterator).name == "job 0"
        iterator.close()
    assert len(api.called("ListJobs")) == 1


def test_close_stops_the_thread_and_refuses_more_calls(address: str) -> None:
    before = set(threading.enumerate())
    client = Client(address)
    client.nodes()
    (started,) = set(threading.enumerate()) - before
    assert started.name == "wheel-client"
    client.close()
    client.close()  # harmless
    assert not started.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        client.nodes()


def test_close_ends_a_call_still_waiting_in_another_thread() -> None:
    client = Client("127.0.0.1:1", token=TOKEN, retries=50)  # nothing listens: it backs off
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            client.list_jobs()
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    loop = client._loop.loop  # the call is on the client's loop: wait until it is
    while not asyncio.run_coroutine_threadsafe(_tasks_running(), loop).result():
        worker.join(timeout=0.01)
    client.close()
    worker.join(timeout=10)
    assert not worker.is_alive(), "close() must not leave a caller blocked"
    assert len(outcome) == 1
    assert not isinstance(outcome[0], RuntimeError), "it was running, not refused"


async def _tasks_running() -> bool:
    return len(asyncio.all_tasks()) > 1  # besides this one


def test_every_async_method_has_its_blocking_twin() -> None:
    public = {
        name
        for name, member in inspect.getmembers(AsyncClient)
        if not name.startswith("_") and callable(member) and name not in ("close", "with_options")
    }
    assert callable(Client.with_options), "its own: a Client over the same thread"
    for name in public:
        blocking = getattr(Client, name)
        assert blocking.__wrapped__ is getattr(AsyncClient, name), name
        assert blocking.__doc__ == getattr(AsyncClient, name).__doc__
