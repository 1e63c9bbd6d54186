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

Two deadlines, as gRPC users expect: `timeout_s` bounds each try (a node that
does not answer in time raises `DeadlineExceeded`, not retried); `deadline_s`,
when set, bounds the whole call, tries, backoff and all: each try gets what is
left (at most `timeout_s`), and no retry starts that could not end in time.
Either raises `wheel.errors.DeadlineExceeded` (an `Unavailable`). A client's
`with_options(timeout_s=..., deadline_s=..., retries=...)` makes calls with
other values over the same channels.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypeVar

import grpc
import grpc.aio

from wheel._proto.wheel.v1 import api_pb2_grpc as api_grpc
from wheel._proto.wheel.v1 import calendars_pb2_grpc as calendars_grpc
from wheel._version import __version__
from wheel.api.status import from_status
from wheel.errors import ConfigError, DeadlineExceeded, Unavailable, WheelError

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
    deadline_s: float | None = None
    """Deadline of a whole call, its retries and their backoff included; None: none beyond
    `1 + retries` tries of `timeout_s` each."""

    def with_options(
        self, *, timeout_s: float | None, deadline_s: float | None, retries: int | None
    ) -> Settings:
        """These settings with the values given (None: keep), checked as `build` checks."""
        changed = replace(
            self,
            timeout_s=self.timeout_s if timeout_s is None else timeout_s,
            deadline_s=self.deadline_s if deadline_s is None else deadline_s,
            retries=self.retries if retries is None else retries,
        )
        changed.check()
        return changed

    def check(self) -> None:
        if not self.timeout_s > 0:
            raise ConfigError("timeout_s", "must be positive")
        if self.deadline_s is not None and not self.deadline_s > 0:
            raise ConfigError("deadline_s", "must be positive")
        if self.retries < 0:
            raise ConfigError("retries", "must not be negative")

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
        deadline_s: float | None = None,
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
        settings = cls(
            endpoints=parse_endpoints(endpoints),
            token=token,
            tls=tls or pem is not None,
            root_certificates=pem,
            timeout_s=timeout_s,
            retries=retries,
            deadline_s=deadline_s,
        )
        settings.check()
        return settings


class Stubs:
    """The services' stubs over one endpoint's channel."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel
        self.jobs = api_grpc.JobsStub(channel)
        self.executions = api_grpc.ExecutionsStub(channel)
        self.cluster = api_grpc.ClusterStub(channel)
        self.notifications = api_grpc.NotificationsStub(channel)
        self.calendars = calendars_grpc.CalendarsStub(channel)


@dataclass
class _Channels:
    """The endpoints' channels and where the next call goes: shared by a client and the
    clients its `with_options` made."""

    stubs: dict[str, Stubs] = field(default_factory=dict)
    current: int = 0
    loop: asyncio.AbstractEventLoop | None = None
    closed: bool = False


class Transport:
    """Channels opened lazily, one per endpoint, bound to the event loop that opened them."""

    def __init__(self, settings: Settings, channels: _Channels | None = None) -> None:
        self.settings = settings
        self._owner = channels is None
        self._channels = channels if channels is not None else _Channels()
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {settings.token}"),) if settings.token else ()
        )

    def with_settings(self, settings: Settings) -> Transport:
        """A transport with other settings over these channels (closing it closes nothing)."""
        return Transport(settings, self._channels)

    def _stubs_for(self, endpoint: str) -> Stubs:
        loop = asyncio.get_running_loop()
        shared = self._channels
        if shared.closed:
            raise RuntimeError("this wheel client is closed")
        if shared.loop is None:
            shared.loop = loop
        elif shared.loop is not loop:
            raise RuntimeError(
                "a wheel AsyncClient is bound to the event loop it was first used on; "
                "make one per loop (or use wheel.Client, which runs its own)"
            )
        stubs = shared.stubs.get(endpoint)
        if stubs is None:
            if self.settings.tls:
                credentials = grpc.ssl_channel_credentials(self.settings.root_certificates)
                channel = grpc.aio.secure_channel(endpoint, credentials, options=_CHANNEL_OPTIONS)
            else:
                channel = grpc.aio.insecure_channel(endpoint, options=_CHANNEL_OPTIONS)
            stubs = shared.stubs[endpoint] = Stubs(channel)
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
        timeout_s, deadline_s = self.settings.timeout_s, self.settings.deadline_s
        clock = asyncio.get_running_loop().time
        ends_at = None if deadline_s is None else clock() + deadline_s
        tried: list[str] = []
        last: grpc.aio.AioRpcError | None = None
        for number in range(tries):
            if number:
                ceiling_s = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (number - 1))
                pause_s = random.uniform(0, ceiling_s)
                if ends_at is not None and clock() + pause_s >= ends_at:
                    raise self._past_deadline(tried, last) from last
                await asyncio.sleep(pause_s)
            try_s = timeout_s if ends_at is None else min(timeout_s, ends_at - clock())
            if try_s <= 0:
                raise self._past_deadline(tried, last) from last
            index = self._channels.current
            endpoint = endpoints[index % len(endpoints)]
            stubs = self._stubs_for(endpoint)
            tried.append(endpoint)
            try:
                return await pick(stubs)(request, metadata=self._metadata, timeout=try_s)
            except grpc.aio.AioRpcError as exc:
                deadline = exc.code() is grpc.StatusCode.DEADLINE_EXCEEDED
                if deadline and try_s < timeout_s:
                    raise self._past_deadline(tried, exc) from exc
                if not _unreachable(exc, stubs.channel):
                    if deadline:
                        raise DeadlineExceeded(
                            f"{endpoint} did not answer within timeout_s={timeout_s:g} "
                            "(a slow answer is not retried)"
                        ) from exc
                    raise _mapped(exc) from exc
                # Later calls start at the next endpoint, retried or not.
                if self._channels.current == index:
                    self._channels.current = (index + 1) % len(endpoints)
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

    def _past_deadline(
        self, tried: list[str], last: grpc.aio.AioRpcError | None
    ) -> DeadlineExceeded:
        endpoints_tried = ", ".join(dict.fromkeys(tried))
        reason = f": last {_mapped(last)}" if last is not None else ""
        return DeadlineExceeded(
            f"no answer within deadline_s={self.settings.deadline_s:g} "
            f"({len(tried)} tries: {endpoints_tried}){reason}"
        )

    async def close(self) -> None:
        """Close every channel; the transport takes no calls afterwards. A transport of
        `with_settings` closes nothing: the channels are its parent's."""
        if not self._owner:
            return
        shared = self._channels
        shared.closed = True
        stubs, shared.stubs = list(shared.stubs.values()), {}
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
