"""A live copy of every key under an etcd prefix, kept through restarts and compaction.

The contract: `await mirror.start()` returns once the first listing is in;
from then on `mirror.items` follows etcd — a watch from the listing's
revision + 1, resumed from the last revision seen + 1 when the stream breaks
(etcd restarted, a network blip), and a fresh listing when etcd has compacted
the history the watch needed. `changed` is set after every update, so a
caller can await the next one; `on_change` is called with the new items.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

from wheel.coordinator.etcd import Etcd, KeyValue
from wheel.errors import CoordinatorError, HistoryCompacted

log = logging.getLogger(__name__)

RETRY_MIN_S = 0.05
RETRY_MAX_S = 2.0


class PrefixMirror:
    def __init__(
        self,
        etcd: Etcd,
        prefix: str,
        *,
        on_change: Callable[[Mapping[str, KeyValue]], None] | None = None,
    ) -> None:
        self._etcd = etcd
        self._prefix = prefix
        self._on_change = on_change
        self.items: dict[str, KeyValue] = {}
        self.revision = 0
        self.changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listed = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"mirror {self._prefix}")
        listed = asyncio.create_task(self._listed.wait())
        done, _ = await asyncio.wait({listed, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if self._task in done:
            listed.cancel()
            self._task.result()  # raises what ended it

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        delay = RETRY_MIN_S
        need_listing = True
        while True:
            try:
                if need_listing:
                    kvs, revision = await self._etcd.get_prefix(self._prefix)
                    self.items = {kv.key: kv for kv in kvs}
                    self.revision = revision
                    need_listing = False
                    self._notify()
                    self._listed.set()
                async for change in self._etcd.watch_prefix(self._prefix, self.revision + 1):
                    if change.deleted:
                        self.items.pop(change.kv.key, None)
                    else:
                        self.items[change.kv.key] = change.kv
                    self.revision = max(self.revision, change.revision)
                    self._notify()
                    delay = RETRY_MIN_S
            except HistoryCompacted:
                log.warning("mirror.relist", extra={"prefix": self._prefix})
                need_listing = True
            except CoordinatorError as exc:
                log.info("mirror.retry", extra={"prefix": self._prefix, "error": str(exc)})
                await asyncio.sleep(delay)  # backoff while etcd is away
                delay = min(delay * 2, RETRY_MAX_S)

    def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change(self.items)
        self.changed.set()
        self.changed = asyncio.Event()
