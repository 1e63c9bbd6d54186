"""The etcd client wheel uses: a small adapter over aetcd (asyncio, grpc.aio).

Why aetcd behind an adapter (docs/coordinator.md): python-etcd3, the design
card's choice, does not import with protobuf >= 4; aetcd does, and covers
KV, transactions, leases and watches, but keeps no lease alive by itself and
its watches end when etcd restarts. This adapter owns what aetcd lacks —
one keep-alive round trip per call (sessions schedule them), watches that
report the revision to resume from and compaction as its own error — and
translates aetcd's and gRPC's errors once, into wheel's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import aetcd
import aetcd.exceptions
import grpc

from wheel.errors import CoordinatorError, CoordinatorUnavailable, HistoryCompacted

P = ParamSpec("P")
T = TypeVar("T")

_UNAVAILABLE = (
    aetcd.exceptions.ConnectionFailedError,
    aetcd.exceptions.ConnectionTimeoutError,
)


def translated(call: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Raise wheel's errors in place of aetcd's and gRPC's."""

    @functools.wraps(call)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await call(*args, **kwargs)
        except aetcd.exceptions.RevisionCompactedError as exc:
            raise HistoryCompacted(exc.compacted_revision) from exc
        except _UNAVAILABLE as exc:
            raise CoordinatorUnavailable(f"etcd unavailable: {exc}") from exc
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise CoordinatorUnavailable(f"etcd unavailable: {exc.details()}") from exc
            raise CoordinatorError(f"etcd error {exc.code().name}: {exc.details()}") from exc
        except aetcd.exceptions.ClientError as exc:
            raise CoordinatorError(f"etcd error: {exc}") from exc

    return wrapper


CHANNEL_OPTIONS = {
    # gRPC's default reconnect backoff grows to 120 s: an etcd that restarted would
    # go unseen for minutes, past every session deadline. Retry within a second.
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.min_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1000,
    # Channels share subchannels (and their backoff) process-wide by default.
    "grpc.use_local_subchannel_pool": 1,
}


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    lease: int


@dataclass(frozen=True, slots=True)
class Change:
    """A key put or deleted at `revision` (for a delete, `kv.value` is empty)."""

    deleted: bool
    kv: KeyValue
    revision: int


def _kv(raw: Any) -> KeyValue:
    return KeyValue(
        key=raw.key.decode(),
        value=bytes(raw.value),
        create_revision=int(raw.create_revision),
        mod_revision=int(raw.mod_revision),
        lease=int(raw.lease),
    )


async def _cancel_quietly(watch: Any) -> None:
    with contextlib.suppress(Exception):  # etcd away: the stream's end drops the watch too
        await watch.cancel()


class Etcd:
    """One connection to etcd; every method is one round trip unless it says otherwise."""

    def __init__(self, client: aetcd.Client) -> None:
        self._client = client
        self._background: set[asyncio.Future[Any]] = set()

    @classmethod
    @translated
    async def connect(cls, endpoint: str, *, timeout_s: float = 5.0) -> Etcd:
        """Connect to `endpoint` (`http://host:port`)."""
        host, _, port = endpoint.removeprefix("http://").rpartition(":")
        client = aetcd.Client(host=host, port=int(port), timeout=timeout_s, options=CHANNEL_OPTIONS)
        await client.connect()
        return cls(client)

    async def close(self) -> None:
        await self._client.close()

    def _cancel_created(self, creating: asyncio.Future[Any]) -> None:
        """A watch created after its caller left: cancel it on etcd's side."""
        if creating.cancelled() or creating.exception() is not None:
            return
        cancelling = asyncio.ensure_future(_cancel_quietly(creating.result()))
        self._background.add(cancelling)
        cancelling.add_done_callback(self._background.discard)

    @translated
    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        """Every key under `prefix` and the revision the read was made at."""
        result = await self._client.get_prefix(prefix.encode())
        return [_kv(raw) for raw in result.kvs], int(result.header.revision)

    @translated
    async def get(self, key: str) -> KeyValue | None:
        result = await self._client.get_prefix(key.encode())
        exact = [raw for raw in result.kvs if raw.key.decode() == key]
        return _kv(exact[0]) if exact else None

    @translated
    async def put(self, key: str, value: bytes, *, lease: int | None = None) -> int:
        """Write `key`; return the revision of the write."""
        response = await self._client.put(key.encode(), value, lease=lease)
        return int(response.header.revision)

    @translated
    async def create(self, key: str, value: bytes, *, lease: int) -> int | None:
        """Create `key` under `lease` only if it is absent; its create revision, or None."""
        client = self._client
        succeeded, _ = await client.transaction(
            compare=[client.transactions.create(key.encode()) == 0],
            success=[client.transactions.put(key.encode(), value, lease=lease)],
            failure=[],
        )
        if not succeeded:
            return None
        created = await self.get(key)  # a second round trip: the Txn reply has no revision here
        return created.create_revision if created and created.lease == lease else None

    @translated
    async def delete_if_created_at(self, key: str, create_revision: int) -> bool:
        """Delete `key` only if it is still the one created at `create_revision`."""
        client = self._client
        succeeded, _ = await client.transaction(
            compare=[client.transactions.create(key.encode()) == create_revision],
            success=[client.transactions.delete(key.encode())],
            failure=[],
        )
        return bool(succeeded)

    @translated
    async def grant(self, ttl_s: int) -> int:
        """A new lease of `ttl_s` seconds; its id."""
        lease = await self._client.lease(ttl_s)
        return int(lease.id)

    @translated
    async def keep_alive(self, lease_id: int) -> int:
        """Refresh a lease once; the TTL it now has, 0 when it is gone."""
        reply = await self._client.refresh_lease(lease_id)
        return int(reply.TTL) if reply is not None else 0

    @translated
    async def revoke(self, lease_id: int) -> None:
        await self._client.revoke_lease(lease_id)

    @translated
    async def compact(self, revision: int) -> None:
        """Drop history below `revision` (operators and tests; etcd auto-compacts in production)."""
        await self._client.compact(revision)

    async def watch_prefix(self, prefix: str, start_revision: int) -> AsyncIterator[Change]:
        """Changes under `prefix` from `start_revision` on; ends with an error when the stream does.

        HistoryCompacted: re-list and watch from the list's revision + 1.
        CoordinatorUnavailable: resume from the last revision seen + 1.
        """
        creating = asyncio.ensure_future(
            self._client.watch_prefix(prefix.encode(), start_revision=start_revision)
        )
        try:
            # Never cancelled halfway: aetcd pairs a created reply with the oldest
            # pending create, so an abandoned create would answer the next caller's.
            watch = await asyncio.shield(creating)
        except asyncio.CancelledError:
            creating.add_done_callback(self._cancel_created)
            raise
        except aetcd.exceptions.RevisionCompactedError as exc:
            raise HistoryCompacted(exc.compacted_revision) from exc
        except (aetcd.exceptions.ClientError, grpc.aio.AioRpcError) as exc:
            raise CoordinatorUnavailable(f"etcd watch failed: {exc}") from exc
        try:
            async for event in watch:
                yield Change(event.kind == "DELETE", _kv(event.kv), int(event.kv.mod_revision))
        except aetcd.exceptions.RevisionCompactedError as exc:
            raise HistoryCompacted(exc.compacted_revision) from exc
        except (aetcd.exceptions.ClientError, grpc.aio.AioRpcError) as exc:
            raise CoordinatorUnavailable(f"etcd watch ended: {exc}") from exc
        finally:
            await watch.cancel()
