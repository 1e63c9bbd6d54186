"""The Wheel-Signature header: HMAC-SHA256 over a timestamp and the body.

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
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence

from wheel.errors import BadSignature

HEADER = "Wheel-Signature"
TOLERANCE_S = 300
"""How far from now a timestamp may be before `verify` calls it a replay (or a bad clock)."""


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
