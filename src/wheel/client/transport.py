"""Channels to scheduler nodes, the bearer token, and failover with retry.

Any node answers the public API, so the client holds a list of endpoints and
one grpc.aio channel per endpoint, opened on first use. Calls go to the
current endpoint; when one cannot be reached the client moves to the next.

Retry is per call and only for calls safe to repeat: a call whose first try
may have been applied must be answered the same way, or refused harmlessly,
when it is tried again. The caller says which calls are (`retry=True`); the
transport retries those when the endpoint is unavailable:

- status UNAVAILABLE (the node is down, draining, or lost Postgres or etcd);
- DEADLINE_EXCEEDED on a channel that never became READY (the address
  swallows connections): a connection failure, not a slow answer. A slow
  answer from a connected node is not retried: repeating it would add load
  to a node that is already slow.

Each retry moves to the next endpoint and first sleeps a random time in
[0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**n)) ("full jitter": clients that
failed together do not come back together). After `1 + retries` tries the
call raises `wheel.errors.Unavailable` naming the endpoints tried. Every
other failure is mapped once, by `wheel.api.status.from_status`, to the
exception the server raised.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypeVar

import grpc
import grpc.aio

from wheel import __version__
from wheel._proto.wheel.v1 import api_pb2_grpc as api_grpc
from wheel.api.status import from_status
from wheel.errors import ConfigError, Unavailable, WheelError

log = logging.getLogger(__name__)

Request = TypeVar("Request")
Response = TypeVar("Response")

BACKOFF_BASE_S = 0.05
BACKOFF_CAP_S = 2.0
ENDPOINTS_ENV = "WHEEL_ENDPOINTS"
TOKEN_ENV = "WHEEL_TOKEN"

if TYPE_CHECKING:
    Pick: TypeAlias = Callable[["Stubs"], grpc.aio.UnaryUnaryMultiCallable[Request, Response]]
    """Which method of an endpoint's stubs a call uses: `lambda s: s.jobs.GetJob`."""

_CHANNEL_OPTIONS = (("grpc.primary_user_agent", f"wheel-python/{__version__}"),)


def parse_endpoints(endpoints: str | Sequence[str] | None) -> tuple[str, ...]:
    """`"a:1,b:2"`, `["a:1", "b:2"]` (items may hold commas too), or None for $WHEEL_ENDPOINTS."""
    if endpoints is None:
        endpoints = os.environ.get(ENDPOINTS_ENV, "")
    items = [endpoints] if isinstance(endpoints, str) else list(endpoints)
    parsed = tuple(
        part.strip() for item in items for part in item.replace(" ", ",").split(",") if part.strip()
    )
    if not parsed:
        raise ConfigError("endpoints", f"give at least one host:port (or set {ENDPOINTS_ENV})")
    for endpoint in parsed:
        host, sep, port = endpoint.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError("endpoints", f"{endpoint!r} is not host:port")
    return parsed


@dataclass(frozen=True, slots=True)
class Settings:
    """How to reach the cluster; built once, validated on construction."""

    endpoints: tuple[str, ...]
    token: str | None
    """Sent as `authorization: Bearer <token>` on every call."""
    tls: bool
    root_certificates: bytes | None
    """PEM CA bundle; None: the system's roots (when tls)."""
    timeout_s: float
    """Deadline of each try of a call."""
    retries: int
    """Extra tries of a call that is safe to repeat."""

    @classmethod
    def build(
        cls,
        endpoints: str | Sequence[str] | None,
        *,
        token: str | None,
        tls: bool,
        root_certificates: str | os.PathLike[str] | None,
        timeout_s: float,
        retries: int,
    ) -> Settings:
        if token is None:
            token = os.environ.get(TOKEN_ENV) or None
        if token is not None and (not token.strip() or any(c in token for c in "\r\n")):
            raise ConfigError("token", "must be a non-empty single line")
        pem = None
        if root_certificates is not None:
            path = Path(root_certificates)
            try:
                pem = path.read_bytes()
            except OSError as exc:
                raise ConfigError(
                    "root_certificates", f"cannot read {path}: {exc.strerror}"
                ) from None
        if timeout_s <= 0:
            raise ConfigError("timeout_s", "must be positive")
        if retries < 0:
            raise ConfigError("retries", "must not be negative")
        return cls(
            endpoints=parse_endpoints(endpoints),
            token=token,
            tls=tls or pem is not None,
            root_certificates=pem,
            timeout_s=timeout_s,
            retries=retries,
        )


class Stubs:
    """The services' stubs over one endpoint's channel."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel
        self.jobs = api_grpc.JobsStub(channel)
        self.executions = api_grpc.ExecutionsStub(channel)
        self.cluster = api_grpc.ClusterStub(channel)
        self.notifications = api_grpc.NotificationsStub(channel)


class Transport:
    """Channels opened lazily, one per endpoint, bound to the event loop that opened them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._stubs: dict[str, Stubs] = {}
        self._current = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {settings.token}"),) if settings.token else ()
        )

    def _stubs_for(self, endpoint: str) -> Stubs:
        loop = asyncio.get_running_loop()
        if self._closed:
            raise RuntimeError("this wheel client is closed")
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError(
                "a wheel AsyncClient is bound to the event loop it was first used on; "
                "make one per loop (or use wheel.Client, which runs its own)"
            )
        stubs = self._stubs.get(endpoint)
        if stubs is None:
            if self.settings.tls:
                credentials = grpc.ssl_channel_credentials(self.settings.root_certificates)
                channel = grpc.aio.secure_channel(endpoint, credentials, options=_CHANNEL_OPTIONS)
            else:
                channel = grpc.aio.insecure_channel(endpoint, options=_CHANNEL_OPTIONS)
            stubs = self._stubs[endpoint] = Stubs(channel)
        return stubs

    async def call(
        self,
        pick: Pick[Request, Response],
        request: Request,
        *,
        retry: bool,
    ) -> Response:
        """Send `request` to the method `pick` chooses from an endpoint's stubs.

        `retry`: the call is safe to repeat, so an unavailable endpoint is
        followed by the next one (see the module docstring).
        """
        endpoints = self.settings.endpoints
        tries = 1 + self.settings.retries if retry else 1
        tried: list[str] = []
        last: grpc.aio.AioRpcError | None = None
        for number in range(tries):
            if number:
                ceiling_s = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (number - 1))
                await asyncio.sleep(random.uniform(0, ceiling_s))
            index = self._current
            endpoint = endpoints[index % len(endpoints)]
            stubs = self._stubs_for(endpoint)
            tried.append(endpoint)
            try:
                return await pick(stubs)(
                    request, metadata=self._metadata, timeout=self.settings.timeout_s
                )
            except grpc.aio.AioRpcError as exc:
                if not _unreachable(exc, stubs.channel):
                    raise _mapped(exc) from exc
                # Later calls start at the next endpoint, retried or not.
                if self._current == index:
                    self._current = (index + 1) % len(endpoints)
                log.debug(
                    "client.endpoint_unavailable",
                    extra={"endpoint": endpoint, "code": exc.code().name, "try": number + 1},
                )
                last = exc
        assert last is not None
        reason = _mapped(last)
        if not retry:
            raise Unavailable(
                f"{tried[0]}: {reason} (not retried: the call is not safe to repeat)"
            ) from last
        endpoints_tried = ", ".join(dict.fromkeys(tried))
        raise Unavailable(
            f"no endpoint answered in {tries} tries ({endpoints_tried}): {reason}"
        ) from last

    async def close(self) -> None:
        """Close every channel; the transport takes no calls afterwards."""
        self._closed = True
        stubs, self._stubs = list(self._stubs.values()), {}
        for item in stubs:
            await item.channel.close()


def _mapped(exc: grpc.aio.AioRpcError) -> WheelError:
    trailing = exc.trailing_metadata() or ()
    metadata = {key: value for key, value in trailing if isinstance(value, str)}
    return from_status(exc.code(), exc.details() or "", metadata)


def _unreachable(exc: grpc.aio.AioRpcError, channel: grpc.aio.Channel) -> bool:
    code = exc.code()
    if code is grpc.StatusCode.UNAVAILABLE:
        return True
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return channel.get_state() is not grpc.ChannelConnectivity.READY
    return False
