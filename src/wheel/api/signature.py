"""What a receiver checks: the Wheel-Signature header, and an HTTP task's request headers.

    Wheel-Signature: t=1764547200,v1=5257a869e7...

`v1` is hex HMAC-SHA256 keyed by the tenant's secret over `"<t>." + body`;
an HTTP task's request also binds its run, over
`"<t>.<execution id>.<attempt>.<fence>." + body`, so no header of the run's
can be changed on a captured request either.
The timestamp is signed with the body, so a receiver that refuses old
timestamps refuses replays; within a day of a secret's rotation the header
carries a second `v1` made with the previous secret, and either one proves
the sender. This is the scheme Stripe and Svix use, so receivers' habits
carry over; wheel computes it with the standard library, nothing more is
needed.

An HTTP task's request carries:

    Idempotency-Key: <execution id>        the same for every attempt of the run
    Wheel-Execution-Id: <execution id>
    Wheel-Job-Id, Wheel-Attempt, Wheel-Fence
    Wheel-Scheduled-For, Wheel-Deadline    RFC 3339, UTC
    Wheel-Signature: t=<unix>,v1=<hex>     as above, binding the run

A receiver keeps the highest fence it has seen per execution id and refuses a
request with a lower one: that attempt was given up and run again since.

This is contract both sides share: nodes sign (`wheel.notify.sender`,
`wheel.http_tasks.call`), and receivers check with `verify` and
`verify_http_task` (also `wheel.client.verify_webhook` and
`wheel.client.verify_http_task`). It imports only the standard library and
`wheel.errors`, so a receiver that loads it loads nothing of a node's.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wheel.errors import BadSignature

HEADER = "Wheel-Signature"
TOLERANCE_S = 300
"""How far from now a timestamp may be before `verify` calls it a replay (or a bad clock)."""

IDEMPOTENCY_KEY = "Idempotency-Key"
EXECUTION_ID = "Wheel-Execution-Id"
JOB_ID = "Wheel-Job-Id"
ATTEMPT = "Wheel-Attempt"
FENCE = "Wheel-Fence"
SCHEDULED_FOR = "Wheel-Scheduled-For"
DEADLINE = "Wheel-Deadline"
TRACEPARENT = "traceparent"


def _mac(secret: str, timestamp: int, body: bytes, bound: Sequence[str]) -> str:
    signed = ".".join([str(timestamp), *bound, ""]).encode() + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def sign(secrets: Sequence[str], body: bytes, timestamp: int, *, bound: Sequence[str] = ()) -> str:
    """The header value for `body` sent at `timestamp` (Unix seconds), one v1 per secret;
    `bound` are the values signed between the timestamp and the body."""
    if not secrets:
        raise ValueError("no secret to sign with")
    macs = (f"v1={_mac(s, timestamp, body, bound)}" for s in secrets)
    return ",".join([f"t={timestamp}", *macs])


def verify(
    secret: str,
    header: str,
    body: bytes,
    *,
    tolerance_s: float = TOLERANCE_S,
    now: float | None = None,
    bound: Sequence[str] = (),
) -> int:
    """Check a notification: its signature by `secret` and its age. Returns its timestamp.

    `body` is the request body exactly as received (before any JSON parsing).
    Raises BadSignature with the reason otherwise.
    """
    timestamp: int | None = None
    signatures: list[str] = []
    for item in header.split(","):
        name, _, value = item.strip().partition("=")
        if name == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise BadSignature(f"t={value!r} is not a Unix time") from None
        elif name == "v1":
            signatures.append(value)
    if timestamp is None:
        raise BadSignature("no t= timestamp")
    if not signatures:
        raise BadSignature("no v1= signature")
    age = (time.time() if now is None else now) - timestamp
    if abs(age) > tolerance_s:
        raise BadSignature(
            f"timestamp is {age:.0f} s from now, beyond the {tolerance_s:.0f} s tolerance"
        )
    expected = _mac(secret, timestamp, body, bound)
    if not any(hmac.compare_digest(expected, s) for s in signatures):
        raise BadSignature("no v1 signature matches this secret")
    return timestamp


@dataclass(frozen=True, slots=True)
class HttpTaskRequest:
    """A verified request: which run and attempt it is."""

    execution_id: str
    attempt: int
    fence: int
    timestamp: int


def bound(execution_id: str, attempt: int, fence: int) -> tuple[str, str, str]:
    """The run's values the signature binds, in order."""
    return (execution_id, str(attempt), str(fence))


def _header(headers: Mapping[str, str], name: str) -> str:
    # HTTP header names are case-insensitive; frameworks hand over either case.
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    raise BadSignature(f"no {name} header")


def verify_http_task(
    secret: str, headers: Mapping[str, str], body: bytes, *, tolerance_s: float = TOLERANCE_S
) -> HttpTaskRequest:
    """Check an HTTP task's request: signed by `secret`, recent, its run's headers intact.

    `body` is the request body exactly as received. Raises BadSignature with
    the reason otherwise.
    """
    execution_id = _header(headers, EXECUTION_ID)
    try:
        attempt = int(_header(headers, ATTEMPT))
        fence = int(_header(headers, FENCE))
    except ValueError:
        raise BadSignature(f"{ATTEMPT} and {FENCE} must be integers") from None
    timestamp = verify(
        secret,
        _header(headers, HEADER),
        body,
        tolerance_s=tolerance_s,
        bound=bound(execution_id, attempt, fence),
    )
    return HttpTaskRequest(execution_id, attempt, fence, timestamp)
