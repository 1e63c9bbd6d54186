"""The etcd adapter and the prefix mirror against a real etcd, restarts included."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from wheel.coordinator.etcd import Etcd
from wheel.coordinator.mirror import PrefixMirror
from wheel.errors import HistoryCompacted
from wheel.local import EtcdServer, LocalServices


@pytest.fixture
async def etcd(local_services: LocalServices) -> AsyncIterator[Etcd]:
    client = await Etcd.connect(local_services.etcd.endpoint)
    try:
        yield client
    finally:
        await client.close()


async def until(mirror: PrefixMirror, condition: object) -> None:
    """Wait for the mirror's next updates until `condition()` holds."""
    assert callable(condition)
    while not condition():
        await mirror.changed.wait()


async def test_create_only_if_absent_and_delete_only_if_unchanged(
    etcd: Etcd, etcd_prefix: str
) -> None:
    lease = await etcd.grant(10)
    key = f"{etcd_prefix}partitions/0001"
    first = await etcd.create(key, b'{"node": "a"}', lease=lease)
    assert first is not None
    assert await etcd.create(key, b'{"node": "b"}', lease=lease) is None
    assert not await etcd.delete_if_created_at(key, first + 1)
    assert await etcd.delete_if_created_at(key, first)
    again = await etcd.create(key, b'{"node": "b"}', lease=lease)
    assert again is not None
    assert again > first, "a new creation is a new, larger revision: the next epoch"
    await etcd.revoke(lease)


async def test_a_lease_that_is_not_kept_alive_takes_its_keys(etcd: Etcd, etcd_prefix: str) -> None:
    lease = await etcd.grant(1)
    key = f"{etcd_prefix}nodes/n1"
    await etcd.put(key, b"{}", lease=lease)
    assert await etcd.keep_alive(lease) >= 1
    mirror = PrefixMirror(etcd, f"{etcd_prefix}nodes/")
    await mirror.start()
    assert key in mirror.items
    await until(mirror, lambda: key not in mirror.items)
    assert await etcd.keep_alive(lease) == 0
    await mirror.stop()


async def test_the_mirror_follows_puts_and_deletes(etcd: Etcd, etcd_prefix: str) -> None:
    await etcd.put(f"{etcd_prefix}a", b"1")
    mirror = PrefixMirror(etcd, etcd_prefix)
    await mirror.start()
    assert set(mirror.items) == {f"{etcd_prefix}a"}
    await etcd.put(f"{etcd_prefix}b", b"2")
    await until(mirror, lambda: f"{etcd_prefix}b" in mirror.items)
    await etcd.delete_if_created_at(
        f"{etcd_prefix}a", mirror.items[f"{etcd_prefix}a"].create_revision
    )
    await until(mirror, lambda: f"{etcd_prefix}a" not in mirror.items)
    await mirror.stop()


async def test_the_mirror_resumes_after_etcd_restarts(own_etcd: EtcdServer) -> None:
    etcd = await Etcd.connect(own_etcd.endpoint)
    await etcd.put("/w/x", b"before")
    mirror = PrefixMirror(etcd, "/w/")
    await mirror.start()
    own_etcd.stop()
    restarted = EtcdServer.start(own_etcd.data_dir, port=own_etcd.port, durable=False)
    try:
        writer = await Etcd.connect(restarted.endpoint)
        await writer.put("/w/y", b"after")
        await until(mirror, lambda: "/w/y" in mirror.items)
        assert mirror.items["/w/x"].value == b"before"
        await writer.close()
    finally:
        await mirror.stop()
        await etcd.close()
        restarted.stop()


async def test_a_watch_below_compaction_says_so(etcd: Etcd, etcd_prefix: str) -> None:
    key = f"{etcd_prefix}k"
    first = await etcd.put(key, b"1")
    latest = await etcd.put(key, b"2")
    await etcd.compact(latest)
    changes = etcd.watch_prefix(etcd_prefix, first)
    with pytest.raises(HistoryCompacted):
        await anext(changes)
