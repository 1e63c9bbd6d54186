"""PrefixMirror against a scripted etcd client: it trusts no stream it cannot account for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from wheel.coordinator.etcd import Change, KeyValue
from wheel.coordinator.mirror import PrefixMirror
from wheel.errors import CoordinatorUnavailable

PREFIX = "/wheel/c/partitions/"


def kv(key: str, revision: int) -> KeyValue:
    return KeyValue(key, b"{}", revision, revision, 7)


class ScriptedEtcd:
    """Listings are what `store` holds; each watch plays the next script, then waits."""

    def __init__(self) -> None:
        self.store: dict[str, KeyValue] = {}
        self.revision = 1
        self.scripts: list[list[Change | Exception]] = []
        self.listed = asyncio.Event()
        self.listings = 0
        self.watches_from: list[int] = []

    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        self.listings += 1
        self.listed.set()
        return [v for k, v in self.store.items() if k.startswith(prefix)], self.revision

    async def watch_prefix(self, prefix: str, start_revision: int) -> AsyncIterator[Change]:
        self.watches_from.append(start_revision)
        script = self.scripts.pop(0) if self.scripts else []
        for step in script:
            if isinstance(step, Exception):
                raise step
            yield step
        await asyncio.Event().wait()  # a healthy, quiet stream


async def listings_reach(etcd: ScriptedEtcd, count: int) -> None:
    while etcd.listings < count:
        etcd.listed.clear()
        await etcd.listed.wait()


async def test_a_key_outside_the_prefix_is_a_crossed_watch_and_the_mirror_lists_again() -> None:
    etcd = ScriptedEtcd()
    etcd.store[PREFIX + "0001"] = kv(PREFIX + "0001", 1)
    # The client hands this mirror another watch's events (another prefix).
    etcd.scripts.append([Change(False, kv("/wheel/c/nodes/n1", 2), 2)])
    mirror = PrefixMirror(etcd, PREFIX)  # type: ignore[arg-type]
    await mirror.start()
    await asyncio.wait_for(listings_reach(etcd, 2), 5)
    await mirror.stop()
    assert set(mirror.items) == {PREFIX + "0001"}, "the foreign key is never stored"
    assert len(etcd.watches_from) == 2, "and the watch is made anew"


async def test_every_broken_stream_lists_again_so_a_missed_delete_is_seen() -> None:
    etcd = ScriptedEtcd()
    etcd.store[PREFIX + "0001"] = kv(PREFIX + "0001", 1)
    etcd.scripts.append([CoordinatorUnavailable("etcd restarted")])
    mirror = PrefixMirror(etcd, PREFIX)  # type: ignore[arg-type]
    await mirror.start()
    assert set(mirror.items) == {PREFIX + "0001"}
    # While the stream was down the key expired: no watch will ever report it.
    del etcd.store[PREFIX + "0001"]
    etcd.revision = 5
    await asyncio.wait_for(listings_reach(etcd, 2), 5)
    await mirror.stop()
    assert mirror.items == {}
    assert etcd.watches_from[-1] == 6, "watching resumes after the new listing"


async def test_one_revision_may_delete_many_keys() -> None:
    etcd = ScriptedEtcd()
    for n in range(3):
        etcd.store[f"{PREFIX}{n:04d}"] = kv(f"{PREFIX}{n:04d}", 1)
    # A lease's expiry deletes all its keys in one revision.
    etcd.scripts.append([Change(True, kv(f"{PREFIX}{n:04d}", 9), 9) for n in range(3)])
    mirror = PrefixMirror(etcd, PREFIX)  # type: ignore[arg-type]
    await mirror.start()
    while mirror.items:
        await mirror.changed.wait()
    assert mirror.revision == 9
    await mirror.stop()


async def test_a_periodic_listing_repairs_a_watch_that_went_silent() -> None:
    etcd = ScriptedEtcd()
    mirror = PrefixMirror(etcd, PREFIX, resync_s=0.01)  # type: ignore[arg-type]
    await mirror.start()
    etcd.store[PREFIX + "0002"] = kv(PREFIX + "0002", 3)  # a put the watch never reports
    etcd.revision = 3
    while PREFIX + "0002" not in mirror.items:
        await mirror.changed.wait()
    await mirror.stop()
    assert etcd.watches_from == [2], "resyncing keeps the one watch"
