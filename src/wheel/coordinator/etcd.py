"""The etcd client wheel uses, over stubs of etcd's own v3 API (`wheel._proto.etcd`).

Why our own client (docs/coordinator.md): no maintained Python library does
TLS, authentication, several endpoints, a streaming lease keep-alive and the
transaction's revision together; etcd's gRPC API is small and stable, and
wheel uses ten calls of it. This module owns the connection and its rules:

- **endpoints**: one channel each, `https://` (or any TLS setting) for TLS;
  a call that finds its endpoint unavailable moves the next call to the next
  endpoint. Reads are retried there at once; writes are not (a write whose
  answer was lost may have happened), they raise CoordinatorUnavailable and
  the caller's loop decides.
- **authentication**: with a user, a token from `Auth.Authenticate` rides on
  every call; a call refused for a stale token logs in again and is retried
  once. A wrong password, an untrusted CA or a refused certificate at
  connect raise ConfigError naming the setting.
- **leases**: one `LeaseKeepAlive` stream carries every keep-alive.
- **watches**: one `Watch` stream per watch, from a revision; compaction is
  HistoryCompacted, a broken stream CoordinatorUnavailable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from wheel._proto.etcd.etcdserverpb import rpc_pb2 as rpc
from wheel._proto.etcd.etcdserverpb import rpc_pb2_grpc
from wheel._proto.etcd.mvccpb import kv_pb2
from wheel.coordinator.etcd_settings import EtcdSettings, address
from wheel.errors import ConfigError, CoordinatorError, CoordinatorUnavailable, HistoryCompacted

if TYPE_CHECKING:
    from wheel._proto.etcd.etcdserverpb import rpc_pb2_grpc as rpc_grpc

T = TypeVar("T")
log = logging.getLogger(__name__)

CHANNEL_OPTIONS = (
    # gRPC's default reconnect backoff grows to 120 s: an etcd that restarted would
    # go unseen for minutes, past every session deadline. Retry within a second.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    # Channels share subchannels (and their backoff) process-wide by default.
    ("grpc.use_local_subchannel_pool", 1),
)
_GONE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def _prefix_end(prefix: bytes) -> bytes:
    """The first key after every key that starts with `prefix` (etcd's range_end)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return b"\x00"
    return stripped[:-1] + bytes([stripped[-1] + 1])


@dataclass(frozen=True, slots=True)
class LeaseTime:
    remaining_s: int
    """Whole seconds left; -1 once the lease is gone."""
    granted_s: int
    """The TTL it was granted: what each keep-alive renews it to."""


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


def _kv(raw: kv_pb2.KeyValue) -> KeyValue:
    return KeyValue(
        key=raw.key.decode(),
        value=bytes(raw.value),
        create_revision=int(raw.create_revision),
        mod_revision=int(raw.mod_revision),
        lease=int(raw.lease),
    )


def _unavailable(exc: grpc.aio.AioRpcError, endpoint: str) -> CoordinatorUnavailable:
    return CoordinatorUnavailable(f"etcd {endpoint} unavailable: {exc.details()}")


def _failed(exc: grpc.aio.AioRpcError) -> CoordinatorError:
    return CoordinatorError(f"etcd error {exc.code().name}: {exc.details()}")


@dataclass
class _Endpoint:
    address: str
    channel: grpc.aio.Channel
    kv: rpc_grpc.KVAsyncStub
    lease: rpc_grpc.LeaseAsyncStub
    watch: rpc_grpc.WatchAsyncStub
    auth: rpc_grpc.AuthAsyncStub


def _open(address: str, settings: EtcdSettings) -> _Endpoint:
    if settings.tls:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=Path(settings.ca_file).read_bytes() if settings.ca_file else None,
            private_key=Path(settings.key_file).read_bytes() if settings.key_file else None,
            certificate_chain=Path(settings.cert_file).read_bytes() if settings.cert_file else None,
        )
        channel = grpc.aio.secure_channel(address, credentials, options=CHANNEL_OPTIONS)
    else:
        channel = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
    return _Endpoint(
        address,
        channel,
        rpc_pb2_grpc.KVStub(channel),
        rpc_pb2_grpc.LeaseStub(channel),
        rpc_pb2_grpc.WatchStub(channel),
        rpc_pb2_grpc.AuthStub(channel),
    )


class Etcd:
    """A connection to an etcd cluster; every method is one round trip unless it says otherwise."""

    def __init__(self, settings: EtcdSettings) -> None:
        self._settings = settings
        self._endpoints = [_open(address(e), settings) for e in settings.endpoints]
        self._current = 0
        self._token: str | None = None
        self._login = asyncio.Lock()
        self._keep_alive: Any = None
        self._keep_alive_lock = asyncio.Lock()

    @classmethod
    async def connect(
        cls, endpoints: str | Sequence[str] | EtcdSettings, *, timeout_s: float = 5.0
    ) -> Etcd:
        """Connect and check that etcd answers and takes the user: ConfigError names a bad
        setting (password, CA, certificate). An etcd that is away is logged, not raised."""
        settings = (
            endpoints
            if isinstance(endpoints, EtcdSettings)
            else EtcdSettings.of(endpoints, timeout_s=timeout_s)
        )
        settings.check()
        etcd = cls(settings)
        try:
            await etcd._first_contact()
        except BaseException:
            await etcd.close()
            raise
        return etcd

    async def close(self) -> None:
        if self._keep_alive is not None:
            self._keep_alive.cancel()
        for endpoint in self._endpoints:
            await endpoint.channel.close()

    # -- connection --------------------------------------------------------------------------

    @property
    def _endpoint(self) -> _Endpoint:
        return self._endpoints[self._current]

    def _move_on(self, endpoint: _Endpoint) -> None:
        """After `endpoint` failed, the next call goes to the next endpoint."""
        if self._endpoint is endpoint:
            self._current = (self._current + 1) % len(self._endpoints)

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        return (("token", self._token),) if self._token else ()

    async def _authenticate(self, endpoint: _Endpoint) -> None:
        s = self._settings
        reply = await endpoint.auth.Authenticate(
            rpc.AuthenticateRequest(name=s.user, password=s.password), timeout=s.timeout_s
        )
        self._token = reply.token

    async def _first_contact(self) -> None:
        last: grpc.aio.AioRpcError | None = None
        for _ in self._endpoints:
            endpoint = self._endpoint
            try:
                if self._settings.user:
                    await self._authenticate(endpoint)
                await endpoint.kv.Range(
                    rpc.RangeRequest(key=b"\x00", limit=1),
                    metadata=self._metadata(),
                    timeout=self._settings.timeout_s,
                )
                return
            except grpc.aio.AioRpcError as exc:
                refused = self._refused_setting(exc)
                if refused is not None:
                    raise refused from exc
                if exc.code() not in _GONE:
                    raise _failed(exc) from exc
                last = exc
                self._move_on(endpoint)
        # Away, not misconfigured: the calls that follow wait and retry as they do when
        # etcd goes away later (a node or executor may start before etcd does).
        assert last is not None
        log.warning(
            "etcd.unavailable",
            extra={"endpoints": list(self._settings.endpoints), "error": last.details()},
        )

    def _refused_setting(self, exc: grpc.aio.AioRpcError) -> ConfigError | None:
        """The setting to blame when etcd (or its TLS) refuses us at connect, if one is."""
        details = (exc.details() or "") + " " + (exc.debug_error_string() or "")
        lowered = details.lower()
        if "authentication failed" in lowered or "invalid user id or password" in lowered:
            return ConfigError("etcd_password", f"etcd refused user {self._settings.user!r}")
        if "user name is empty" in lowered or "user name not found" in lowered:
            return ConfigError("etcd_user", "etcd requires a user (authentication is enabled)")
        if exc.code() is grpc.StatusCode.PERMISSION_DENIED:
            who = f"user {self._settings.user!r}" if self._settings.user else "no user"
            return ConfigError(
                "etcd_user", f"etcd denies {who} (authentication is enabled): {exc.details()}"
            )
        if exc.code() in _GONE and (
            "certificate verify failed" in lowered or "certificate_verify_failed" in lowered
        ):
            return ConfigError(
                "etcd_ca_file",
                "etcd's certificate is not signed by a CA this process trusts "
                f"({self._settings.ca_file or 'the system roots'})",
            )
        if exc.code() in _GONE and any(
            s in lowered
            for s in ("certificate expired", "bad certificate", "certificate required",
                      "unknown ca", "alert")
        ):  # fmt: skip
            return ConfigError(
                "etcd_cert_file",
                f"etcd refused this process's client certificate: {exc.details()}",
            )
        if exc.code() in _GONE and ("ssl" in lowered or "handshake" in lowered):
            return ConfigError("etcd_ca_file", f"TLS with etcd failed: {exc.details()}")
        return None

    async def _call(
        self, call: Callable[[_Endpoint, tuple[tuple[str, str], ...]], Awaitable[T]], *, read: bool
    ) -> T:
        """One unary call with the current endpoint and token; the rules in the module doc."""
        tries = len(self._endpoints) if read else 1
        relogged = False
        while True:
            endpoint = self._endpoint
            try:
                return await call(endpoint, self._metadata())
            except grpc.aio.AioRpcError as exc:
                if exc.code() is grpc.StatusCode.UNAUTHENTICATED and self._settings.user:
                    if relogged:
                        raise _failed(exc) from exc
                    relogged = True
                    await self._relogin(endpoint)
                    continue
                if exc.code() not in _GONE:
                    raise _failed(exc) from exc
                self._move_on(endpoint)
                tries -= 1
                if tries <= 0:
                    raise _unavailable(exc, endpoint.address) from exc

    async def _relogin(self, endpoint: _Endpoint) -> None:
        stale = self._token
        async with self._login:
            if self._token != stale:
                return  # another call logged in meanwhile
            try:
                await self._authenticate(endpoint)
            except grpc.aio.AioRpcError as exc:
                if exc.code() in _GONE:
                    raise _unavailable(exc, endpoint.address) from exc
                raise _failed(exc) from exc

    # -- keys --------------------------------------------------------------------------------

    async def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        """Every key under `prefix` and the revision the read was made at."""
        key = prefix.encode()
        request = rpc.RangeRequest(key=key, range_end=_prefix_end(key))
        reply = await self._call(
            lambda e, m: e.kv.Range(request, metadata=m, timeout=self._settings.timeout_s),
            read=True,
        )
        return [_kv(raw) for raw in reply.kvs], int(reply.header.revision)

    async def get(self, key: str) -> KeyValue | None:
        request = rpc.RangeRequest(key=key.encode())
        reply = await self._call(
            lambda e, m: e.kv.Range(request, metadata=m, timeout=self._settings.timeout_s),
            read=True,
        )
        return _kv(reply.kvs[0]) if reply.kvs else None

    async def put(self, key: str, value: bytes, *, lease: int | None = None) -> int:
        """Write `key`; return the revision of the write."""
        request = rpc.PutRequest(key=key.encode(), value=value, lease=lease or 0)
        reply = await self._call(
            lambda e, m: e.kv.Put(request, metadata=m, timeout=self._settings.timeout_s),
            read=False,
        )
        return int(reply.header.revision)

    async def create(self, key: str, value: bytes, *, lease: int) -> int | None:
        """Create `key` under `lease` only if it is absent; its create revision, or None."""
        raw = key.encode()
        request = rpc.TxnRequest(
            compare=[
                rpc.Compare(
                    key=raw, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL, create_revision=0
                )
            ],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=raw, value=value, lease=lease))],
        )
        reply = await self._call(
            lambda e, m: e.kv.Txn(request, metadata=m, timeout=self._settings.timeout_s),
            read=False,
        )
        # The transaction's revision is the put's, so the key's create revision.
        return int(reply.header.revision) if reply.succeeded else None

    async def put_if_modified_at(
        self, key: str, value: bytes, mod_revision: int, *, lease: int
    ) -> bool:
        """Write `key` only if its last write is still the one at `mod_revision` (0: only if
        it is absent): a compare-and-set, so two writers of one document never clobber each
        other. One round trip; False: someone wrote first, read again and retry."""
        raw = key.encode()
        target = rpc.Compare.MOD if mod_revision else rpc.Compare.CREATE
        compare = rpc.Compare(key=raw, target=target, result=rpc.Compare.EQUAL)
        if mod_revision:
            compare.mod_revision = mod_revision
        else:
            compare.create_revision = 0
        request = rpc.TxnRequest(
            compare=[compare],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=raw, value=value, lease=lease))],
        )
        reply = await self._call(
            lambda e, m: e.kv.Txn(request, metadata=m, timeout=self._settings.timeout_s),
            read=False,
        )
        return bool(reply.succeeded)

    async def delete_if_created_at(self, key: str, create_revision: int) -> bool:
        """Delete `key` only if it is still the one created at `create_revision`."""
        raw = key.encode()
        request = rpc.TxnRequest(
            compare=[
                rpc.Compare(
                    key=raw,
                    target=rpc.Compare.CREATE,
                    result=rpc.Compare.EQUAL,
                    create_revision=create_revision,
                )
            ],
            success=[rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=raw))],
        )
        reply = await self._call(
            lambda e, m: e.kv.Txn(request, metadata=m, timeout=self._settings.timeout_s),
            read=False,
        )
        return bool(reply.succeeded)

    async def delete(self, key: str) -> int:
        """Delete `key`; how many keys went (0 or 1)."""
        request = rpc.DeleteRangeRequest(key=key.encode())
        reply = await self._call(
            lambda e, m: e.kv.DeleteRange(request, metadata=m, timeout=self._settings.timeout_s),
            read=False,
        )
        return int(reply.deleted)

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every key under `prefix` (a cluster's keys, in tests and `wheel dev`)."""
        key = prefix.encode()
        request = rpc.DeleteRangeRequest(key=key, range_end=_prefix_end(key))
        reply = await self._call(
            lambda e, m: e.kv.DeleteRange(request, metadata=m, timeout=self._settings.timeout_s),
            read=False,
        )
        return int(reply.deleted)

    async def compact(self, revision: int) -> None:
        """Drop history below `revision` (operators and tests; etcd auto-compacts in production)."""
        request = rpc.CompactionRequest(revision=revision)
        await self._call(
            lambda e, m: e.kv.Compact(request, metadata=m, timeout=self._settings.timeout_s),
            read=False,
        )

    # -- leases ------------------------------------------------------------------------------

    async def grant(self, ttl_s: int) -> int:
        """A new lease of `ttl_s` seconds; its id."""
        request = rpc.LeaseGrantRequest(TTL=ttl_s)
        reply = await self._call(
            lambda e, m: e.lease.LeaseGrant(request, metadata=m, timeout=self._settings.timeout_s),
            read=False,
        )
        return int(reply.ID)

    async def revoke(self, lease_id: int) -> None:
        request = rpc.LeaseRevokeRequest(ID=lease_id)
        try:
            await self._call(
                lambda e, m: e.lease.LeaseRevoke(
                    request, metadata=m, timeout=self._settings.timeout_s
                ),
                read=False,
            )
        except CoordinatorError as exc:
            if "requested lease not found" not in str(exc):
                raise

    async def time_to_live(self, lease_id: int) -> LeaseTime:
        """How long a lease has left, and the TTL it was granted (its keep-alives renew)."""
        request = rpc.LeaseTimeToLiveRequest(ID=lease_id)
        reply = await self._call(
            lambda e, m: e.lease.LeaseTimeToLive(
                request, metadata=m, timeout=self._settings.timeout_s
            ),
            read=True,
        )
        return LeaseTime(int(reply.TTL), int(reply.grantedTTL))

    async def keep_alive(self, lease_id: int) -> int:
        """Refresh a lease once, over the connection's one keep-alive stream; the TTL it now
        has, 0 when it is gone."""
        async with self._keep_alive_lock:
            endpoint = self._endpoint
            try:
                async with asyncio.timeout(self._settings.timeout_s):
                    if self._keep_alive is None:
                        self._keep_alive = endpoint.lease.LeaseKeepAlive(metadata=self._metadata())
                    await self._keep_alive.write(rpc.LeaseKeepAliveRequest(ID=lease_id))
                    reply = await self._keep_alive.read()
            except (grpc.aio.AioRpcError, TimeoutError, asyncio.InvalidStateError) as exc:
                self._drop_keep_alive()
                self._move_on(endpoint)
                if isinstance(exc, grpc.aio.AioRpcError) and exc.code() not in _GONE:
                    raise _failed(exc) from exc
                raise CoordinatorUnavailable(f"etcd {endpoint.address}: keep-alive failed") from exc
            if not isinstance(reply, rpc.LeaseKeepAliveResponse):  # grpc.aio.EOF
                self._drop_keep_alive()
                raise CoordinatorUnavailable(f"etcd {endpoint.address} ended the keep-alive stream")
            return int(reply.TTL)

    def _drop_keep_alive(self) -> None:
        if self._keep_alive is not None:
            self._keep_alive.cancel()
            self._keep_alive = None

    # -- watches -----------------------------------------------------------------------------

    async def watch_prefix(self, prefix: str, start_revision: int) -> AsyncIterator[Change]:
        """Changes under `prefix` from `start_revision` on; ends with an error when the stream does.

        HistoryCompacted: re-list and watch from the list's revision + 1.
        CoordinatorUnavailable: resume from the last revision seen + 1.
        """
        key = prefix.encode()
        endpoint = self._endpoint
        stream = endpoint.watch.Watch(metadata=self._metadata())
        try:
            await stream.write(
                rpc.WatchRequest(
                    create_request=rpc.WatchCreateRequest(
                        key=key, range_end=_prefix_end(key), start_revision=start_revision
                    )
                )
            )
            while True:
                reply = await stream.read()
                if not isinstance(reply, rpc.WatchResponse):  # grpc.aio.EOF
                    raise CoordinatorUnavailable(f"etcd {endpoint.address} ended the watch")
                if reply.canceled:
                    if reply.compact_revision > 0:
                        raise HistoryCompacted(int(reply.compact_revision))
                    raise CoordinatorError(f"etcd cancelled the watch: {reply.cancel_reason}")
                for event in reply.events:
                    yield Change(
                        event.type == kv_pb2.Event.DELETE, _kv(event.kv), int(event.kv.mod_revision)
                    )
        except grpc.aio.AioRpcError as exc:
            self._move_on(endpoint)
            if exc.code() is grpc.StatusCode.CANCELLED:
                raise CoordinatorUnavailable(f"etcd {endpoint.address}: watch cancelled") from exc
            if exc.code() not in _GONE:
                raise _failed(exc) from exc
            raise _unavailable(exc, endpoint.address) from exc
        finally:
            with contextlib.suppress(Exception):
                stream.cancel()
