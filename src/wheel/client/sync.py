"""`wheel.Client`: the blocking SDK, `AsyncClient` run on an event loop of its own.

Each `Client` starts a daemon thread running a private event loop; a method
call submits the `AsyncClient` coroutine of the same name to that loop and
waits for its result. There is no second implementation: every method here
is `AsyncClient`'s, wrapped (`_blocking`, `_iterating`), with its signature
and docstring. Because the loop is private, the client works the same from
plain scripts, from threads, and from code that already runs an event loop
(Jupyter, an async web handler) — there it blocks that loop while it waits,
as any blocking call does; use `AsyncClient` to avoid that.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Generator, Sequence
from concurrent.futures import Future
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

from wheel.client.aio import AsyncClient
from wheel.eventloop import loop_factory

P = ParamSpec("P")
T = TypeVar("T")


async def _cancel_pending() -> None:
    """Cancel every other task on this loop and wait for them: their callers get an error."""
    current = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not current]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


class _LoopThread:
    """An event loop running forever in a daemon thread, until `stop`."""

    def __init__(self) -> None:
        self.loop = loop_factory()()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="wheel-client", daemon=True
        )
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("a wheel.Client cannot be called from its own event loop")
        if self.loop.is_closed():
            coroutine.close()
            raise RuntimeError("this wheel client is closed")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            # KeyboardInterrupt while waiting: stop the call too.
            future.cancel()
            raise

    def stop(self) -> None:
        """Finish the loop's async generators, stop it and join the thread (idempotent)."""
        if self.loop.is_closed():
            return
        if threading.current_thread() is self._thread:
            self.loop.stop()
            return
        self.run(_cancel_pending())  # calls still waiting (e.g. in a retry's backoff) end now
        self.run(self.loop.shutdown_asyncgens())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


def _shutdown(loop: _LoopThread, client: AsyncClient) -> None:
    """Close the client's channels, then its loop: `Client.close`, and its finalizer."""
    if loop.loop.is_closed() or threading.current_thread() is loop._thread:
        loop.stop()
        return
    try:
        loop.run(client.close())
    finally:
        loop.stop()


def _leave_open(loop: _LoopThread, client: AsyncClient) -> None:
    """The close of a client `with_options` made: its parent's channels and thread stay."""


def _blocking(
    method: Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Client, P], T]:
    """`AsyncClient.method`, called on the client's loop and waited for."""

    def call(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._loop.run(method(self._async, *args, **kwargs))

    functools.update_wrapper(call, method)
    return call


def _iterating(
    method: Callable[Concatenate[AsyncClient, P], AsyncIterator[T]],
) -> Callable[Concatenate[Client, P], Generator[T, None, None]]:
    """`AsyncClient.method` (an async iterator), iterated item by item on the client's loop."""

    def call(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> Generator[T, None, None]:
        iterator = method(self._async, *args, **kwargs)

        async def step() -> list[T]:
            try:
                return [await anext(iterator)]
            except StopAsyncIteration:
                return []

        try:
            while item := self._loop.run(step()):
                yield item[0]
        finally:
            if isinstance(iterator, AsyncGenerator) and not self._loop.loop.is_closed():
                self._loop.run(iterator.aclose())

    functools.update_wrapper(call, method)
    return call


class Client:
    """A blocking client of wheel's public API; the same methods as `AsyncClient`.

        with wheel.Client("node-a:7070,node-b:7070", token="whl_...") as client:
            job = client.create_job("nightly", "reports.nightly",
                                    wheel.cron("30 1 * * *", "Europe/London")).job
            client.trigger_job(job.id)
            for execution in client.list_executions(job_id=job.id).items:
                print(execution.id, execution.status)

    Arguments, errors and retries are `AsyncClient`'s. The client runs a
    private event loop in a daemon thread until `close()` (or the end of the
    `with` block); it is safe to share between threads.
    """

    def __init__(
        self,
        endpoints: str | Sequence[str] | None = None,
        *,
        token: str | None = None,
        tls: bool = False,
        root_certificates: str | os.PathLike[str] | None = None,
        timeout_s: float = 10.0,
        retries: int = 3,
        deadline_s: float | None = None,
    ) -> None:
        self._async = AsyncClient(
            endpoints,
            token=token,
            tls=tls,
            root_certificates=root_certificates,
            timeout_s=timeout_s,
            retries=retries,
            deadline_s=deadline_s,
        )
        self._loop = _LoopThread()
        self._finalizer = weakref.finalize(self, _shutdown, self._loop, self._async)
        self._parent: Client | None = None

    def with_options(
        self,
        *,
        timeout_s: float | None = None,
        deadline_s: float | None = None,
        retries: int | None = None,
    ) -> Client:
        """This client with another per-try `timeout_s`, overall `deadline_s` or `retries`
        (None: keep), on the same channels and thread (`AsyncClient.with_options`):

            client.with_options(deadline_s=2).get_job("nightly")

        Closing it closes nothing; closing this client closes both."""
        derived = object.__new__(Client)
        derived._async = self._async.with_options(
            timeout_s=timeout_s, deadline_s=deadline_s, retries=retries
        )
        derived._loop = self._loop
        derived._finalizer = weakref.finalize(derived, _leave_open, self._loop, derived._async)
        derived._parent = self  # the parent's thread lives as long as this client
        return derived

    @property
    def endpoints(self) -> tuple[str, ...]:
        return self._async.endpoints

    def __repr__(self) -> str:
        return f"Client({', '.join(self.endpoints)!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the channels and stop the client's thread; closing twice is harmless."""
        self._finalizer()

    create_job = _blocking(AsyncClient.create_job)
    create_jobs = _blocking(AsyncClient.create_jobs)
    apply_jobs = _blocking(AsyncClient.apply_jobs)
    get_job = _blocking(AsyncClient.get_job)
    list_jobs = _blocking(AsyncClient.list_jobs)
    attention_count = _blocking(AsyncClient.attention_count)
    jobs = _iterating(AsyncClient.jobs)
    update_job = _blocking(AsyncClient.update_job)
    pause_job = _blocking(AsyncClient.pause_job)
    resume_job = _blocking(AsyncClient.resume_job)
    delete_job = _blocking(AsyncClient.delete_job)
    preview_schedule = _blocking(AsyncClient.preview_schedule)
    preview_around = _blocking(AsyncClient.preview_around)
    trigger_job = _blocking(AsyncClient.trigger_job)
    backfill_job = _blocking(AsyncClient.backfill_job)
    list_executions = _blocking(AsyncClient.list_executions)
    executions = _iterating(AsyncClient.executions)
    webhook = _blocking(AsyncClient.webhook)
    set_webhook = _blocking(AsyncClient.set_webhook)
    get_execution = _blocking(AsyncClient.get_execution)
    explain_execution = _blocking(AsyncClient.explain_execution)
    explain_occurrence = _blocking(AsyncClient.explain_occurrence)
    retry_execution = _blocking(AsyncClient.retry_execution)
    cancel_execution = _blocking(AsyncClient.cancel_execution)
    nodes = _blocking(AsyncClient.nodes)
    roster = _blocking(AsyncClient.roster)
    partitions = _blocking(AsyncClient.partitions)
    executors = _blocking(AsyncClient.executors)
    create_calendar = _blocking(AsyncClient.create_calendar)
    get_calendar = _blocking(AsyncClient.get_calendar)
    list_calendars = _blocking(AsyncClient.list_calendars)
    calendars = _iterating(AsyncClient.calendars)
    update_calendar = _blocking(AsyncClient.update_calendar)
    delete_calendar = _blocking(AsyncClient.delete_calendar)
    closed_days = _blocking(AsyncClient.closed_days)
