"""A live copy of every key under an etcd prefix, kept through restarts, compaction and
a misbehaving client.

The contract: `await mirror.start()` returns once the first listing is in;
from then on `mirror.items` follows etcd. It lists, then watches from the
listing's revision + 1. Whenever the watch breaks — etcd restarted, a network
blip, compaction, or it simply ends — it lists again before watching again,
so nothing a broken stream dropped is missed. A change for a key outside the
prefix means the stream cannot be trusted (each watch has a stream of its own,
so this is a client fault): the mirror lists and watches anew.
Every `resync_s` it lists again beside a healthy-looking watch (changes the
listing already holds are then skipped by revision): a bound on how long any
silent client fault, such as a watch that stopped delivering, can go unseen.
`changed` is set after every update, so a caller can await the next one;
`on_change` is called with the new items.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

from wheel.coordinator.etcd import Change, Etcd, KeyValue
from wheel.errors import CoordinatorError, HistoryCompacted

log = logging.getLogger(__name__)

RETRY_MIN_S = 0.05
RETRY_MAX_S = 2.0
RESYNC_S = 30.0


class CrossedWatch(CoordinatorError):
    """The watch delivered a key outside the prefix it was asked for."""


class PrefixMirror:
    def __init__(
        self,
        etcd: Etcd,
        prefix: str,
        *,
        on_change: Callable[[Mapping[str, KeyValue]], None] | None = None,
        resync_s: float = RESYNC_S,
    ) -> None:
        self._etcd = etcd
        self._prefix = prefix
        self._on_change = on_change
        self._resync_s = resync_s
        self.items: dict[str, KeyValue] = {}
        self.revision = 0
        """The newest revision the items reflect."""
        self._listed_at = 0
        self.listings = 0
        """How many listings were read (1 + every re-list after a break or a resync)."""
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
        while True:
            try:
                await self._list(fresh=True)
                await self._watch_and_resync()
            except HistoryCompacted:
                log.warning("mirror.relist", extra={"prefix": self._prefix})
            except CrossedWatch as exc:
                log.warning("mirror.crossed_watch", extra={"prefix": self._prefix, "key": str(exc)})
            except CoordinatorError as exc:
                log.info("mirror.retry", extra={"prefix": self._prefix, "error": str(exc)})
                await asyncio.sleep(delay)  # backoff while etcd is away
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            delay = RETRY_MIN_S

    async def _watch_and_resync(self) -> None:
        """Follow the watch, listing again every `resync_s`, until the stream ends."""
        watching = asyncio.create_task(self._follow(), name=f"watch {self._prefix}")
        try:
            while True:
                done, _ = await asyncio.wait({watching}, timeout=self._resync_s)
                if done:
                    watching.result()  # raises what ended it
                    return  # ended without an error: list and watch again
                await self._list(fresh=False)
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError, CoordinatorError):
                await watching

    async def _list(self, *, fresh: bool) -> None:
        """Replace the items with a listing; beside a live watch (not `fresh`), only a
        listing at least as new as what the watch showed."""
        kvs, revision = await self._etcd.get_prefix(self._prefix)
        listed = {kv.key: kv for kv in kvs if kv.key.startswith(self._prefix)}
        self.listings += 1
        if not fresh and revision < self.revision:
            return
        self.revision = self._listed_at = revision
        if listed != self.items or not self._listed.is_set():
            self.items = listed
            self._notify()
        self._listed.set()

    async def _follow(self) -> None:
        async for change in self._etcd.watch_prefix(self._prefix, self.revision + 1):
            self._apply(change)

    def _apply(self, change: Change) -> None:
        if not change.kv.key.startswith(self._prefix):
            raise CrossedWatch(change.kv.key[:200])
        if change.revision <= self._listed_at:
            return  # a listing since the watch began already holds it (one revision
            # may carry many changes: a lease's expiry deletes all its keys at once)
        if change.deleted:
            self.items.pop(change.kv.key, None)
        else:
            self.items[change.kv.key] = change.kv
        self.revision = change.revision
        self._notify()

    def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change(self.items)
        self.changed.set()
        self.changed = asyncio.Event()
