"""HandlerThreads: the worker threads sync handlers run on.

Unlike `ThreadPoolExecutor`, the threads are daemons: a sync handler cannot
be interrupted, so one that ignores cancellation must not keep the process
alive after the executor has drained, reported and exited. Threads start on
demand up to `max_workers`; work beyond that queues.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_Work = tuple[Future[Any], contextvars.Context, Callable[[], Any]]


class HandlerThreads:
    def __init__(self, max_workers: int, *, name: str = "wheel-handler") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max_workers = max_workers
        self._name = name
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._shutdown = False

    def submit(self, call: Callable[[], T]) -> Future[T]:
        """Run `call` on a worker thread, in a copy of the caller's context."""
        future: Future[T] = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("handler threads are shut down")
            self._queue.put((future, contextvars.copy_context(), call))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max_workers:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        return future

    def shutdown(self) -> None:
        """Let idle threads exit; running handlers are not waited for (the threads are daemons)."""
        with self._lock:
            self._shutdown = True
            for _ in self._threads:
                self._queue.put(None)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, context, call = item
            if future.set_running_or_notify_cancel():
                try:
                    result = context.run(call)
                except BaseException as exc:  # handed to the awaiting side, never lost
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del item, future, call
            self._idle.release()
