"""Sending due notifications: POST, signed, with backoff between tries, at least once.

    async with Sender(store.outbox, settings, node_id="node-1") as sender:
        await sender.send_due()   # what is due now, `batch` at a time, concurrently

Every node runs passes (the outbox hands each row to one node at a time),
so delivery goes on while any node lives. A try succeeds on a 2xx answer;
anything else (another status, a timeout, a refused connection) is tried
again after a backoff that doubles from `backoff_base_s` to `backoff_cap_s`,
half of it random so a receiver coming back is not hit by every node at
once, until `max_tries`. Redirects are not followed. A URL that leads to a
denied address, or that the sender cannot read as a URL it sends to (one
stored before the check at create refused it), is given up at once: no retry
would change the answer.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from wheel import tracing
from wheel.api.signature import HEADER, sign
from wheel.errors import type_name
from wheel.model.notifications import DEFAULT_DENIED, redacted
from wheel.notify import payload
from wheel.notify.egress import EgressPolicy, EgressRefused, checked_session
from wheel.store.outbox import Due, Outbox

log = logging.getLogger(__name__)

_ERROR_LIMIT = 300


@dataclass(frozen=True, slots=True)
class SendSettings:
    timeout_s: float = 10.0
    """The longest one POST may take, connecting included."""
    max_tries: int = 30
    backoff_base_s: float = 2.0
    backoff_cap_s: float = 3600.0
    batch: int = 64
    """Notifications taken per pass."""
    concurrency: int = 16
    """POSTs in flight at once from one node."""
    denied_networks: tuple[str, ...] = DEFAULT_DENIED

    @property
    def lease_s(self) -> float:
        """How long a taken notification is this node's: twice a try's timeout and a margin
        (then a node that died mid-try leaves it to the others)."""
        return 2 * self.timeout_s + 5.0


@dataclass(frozen=True, slots=True)
class Tried:
    """How one try went."""

    delivered: bool
    give_up: bool
    error: str | None = None
    status_code: int | None = None
    error_type: str | None = None
    """A failure's class, for its span: the HTTP status, `timeout`, or the error's type."""


def backoff_s(tries: int, settings: SendSettings, rand: Callable[[], float]) -> float:
    """The wait after the `tries`-th failed try: doubling to the cap, its second half random."""
    full = min(settings.backoff_cap_s, settings.backoff_base_s * 2.0 ** min(tries - 1, 40))
    return full / 2 + rand() * full / 2


class Sender:
    def __init__(
        self,
        outbox: Outbox,
        settings: SendSettings,
        *,
        node_id: str,
        on_tried: Callable[[str], None] = lambda result: None,
        clock: Callable[[], float] = time.time,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._outbox = outbox
        self._settings = settings
        self._node_id = node_id
        self._on_tried = on_tried
        self._clock = clock
        self._rand = rand
        self._policy = EgressPolicy.of(settings.denied_networks)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Sender:
        self._session = checked_session(
            self._policy,
            limit=self._settings.concurrency,
            limit_per_host=max(1, self._settings.concurrency // 4),
            timeout=aiohttp.ClientTimeout(total=self._settings.timeout_s),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send_due(self) -> int:
        """Try what is due once each, `batch` at a time, until a pass comes back short.

        Returns how many were tried."""
        tried = 0
        while True:
            taken = await self._outbox.claim(
                self._node_id, limit=self._settings.batch, lease_s=self._settings.lease_s
            )
            await asyncio.gather(*(self._send(due) for due in taken))
            tried += len(taken)
            if len(taken) < self._settings.batch:
                return tried

    async def _send(self, due: Due) -> None:
        tried = await self.try_once(due)
        retry_in_s = 0.0
        give_up = tried.give_up or (not tried.delivered and due.tries >= self._settings.max_tries)
        if not tried.delivered and not give_up:
            retry_in_s = backoff_s(due.tries, self._settings, self._rand)
        result = "delivered" if tried.delivered else "gave_up" if give_up else "failed"
        self._on_tried(result)
        if not tried.delivered:
            log.warning(
                "notify.failed",
                extra={
                    "notification": due.id,
                    "execution": due.key.id,
                    "url": redacted(due.url),
                    "try": due.tries,
                    "error": tried.error,
                    "gave_up": give_up,
                    "retry_in_s": round(retry_in_s, 1),
                },
            )
        recorded = await self._outbox.tried(
            due,
            delivered=tried.delivered,
            give_up=give_up,
            retry_in_s=retry_in_s,
            error=tried.error,
            status_code=tried.status_code,
        )
        if not recorded:
            log.info("notify.superseded", extra={"notification": due.id, "try": due.tries})

    async def try_once(self, due: Due) -> Tried:
        """POST `due` once; never raises for what the receiver or the network does."""
        span = tracing.notify_started(due.key.id, due.id, due.url)
        if span is None:
            return await self._try_once(due)
        try:
            tried = await self._try_once(due)
        except BaseException as exc:  # cancelled (the node stops), or a bug
            kind = "cancelled" if isinstance(exc, asyncio.CancelledError) else type_name(exc)
            tracing.notify_ended(span, kind, kind, None)
            raise
        tracing.notify_ended(span, None if tried.delivered else tried.error,
                             tried.error_type, tried.status_code)  # fmt: skip
        return tried

    async def _try_once(self, due: Due) -> Tried:
        assert self._session is not None, "use the Sender as an async context manager"
        try:
            target = self._policy.target(due.url)
            body = payload.body(due)
            headers = {
                "Content-Type": "application/json",
                HEADER: sign(due.secrets, body, int(self._clock())),
                "Wheel-Notification-Id": due.id,
            }
            async with self._session.post(
                target.url, data=body, headers=headers, allow_redirects=False
            ) as response:
                await response.read()
                if 200 <= response.status < 300:
                    return Tried(True, False, None, response.status)
                status = response.status
                return Tried(False, False, f"HTTP {status}", status, str(status))
        except EgressRefused as exc:
            return Tried(False, True, f"refused: {exc}"[:_ERROR_LIMIT], None, type_name(exc))
        except aiohttp.ClientConnectorError as exc:
            cause = type_name(exc.os_error)
            if isinstance(exc.os_error, EgressRefused):
                return Tried(False, True, f"refused: {exc.os_error}"[:_ERROR_LIMIT], None, cause)
            return Tried(False, False, f"cannot connect: {exc.os_error}"[:_ERROR_LIMIT], None,
                         cause)  # fmt: skip
        except TimeoutError:
            return Tried(False, False, f"no answer within {self._settings.timeout_s:g} s", None,
                         "timeout")  # fmt: skip
        except aiohttp.InvalidURL as exc:  # what the parser let through and aiohttp did not
            return Tried(False, True, f"refused: not a URL to send to: {exc}"[:_ERROR_LIMIT],
                         None, type_name(exc))  # fmt: skip
        except aiohttp.ClientError as exc:
            return Tried(False, False, f"{type(exc).__name__}: {exc}"[:_ERROR_LIMIT], None,
                         type_name(exc))  # fmt: skip
