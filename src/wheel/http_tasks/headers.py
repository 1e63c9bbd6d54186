"""What an HTTP task's request carries, and the receiver's check of it.

    Idempotency-Key: <execution id>        the same for every attempt of the run
    Wheel-Execution-Id: <execution id>
    Wheel-Job-Id, Wheel-Attempt, Wheel-Fence
    Wheel-Scheduled-For, Wheel-Deadline    RFC 3339, UTC
    Wheel-Signature: t=<unix>,v1=<hex>     HMAC-SHA256 by the tenant's secret over
                                           "<t>.<execution id>.<attempt>.<fence>." + body

A receiver keeps the highest fence it has seen per execution id and refuses a
request with a lower one: that attempt was given up and run again since.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wheel.errors import BadSignature
from wheel.notify.signature import HEADER, TOLERANCE_S, verify

IDEMPOTENCY_KEY = "Idempotency-Key"
EXECUTION_ID = "Wheel-Execution-Id"
JOB_ID = "Wheel-Job-Id"
ATTEMPT = "Wheel-Attempt"
FENCE = "Wheel-Fence"
SCHEDULED_FOR = "Wheel-Scheduled-For"
DEADLINE = "Wheel-Deadline"
TRACEPARENT = "traceparent"
SIGNATURE = HEADER


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
        _header(headers, SIGNATURE),
        body,
        tolerance_s=tolerance_s,
        bound=bound(execution_id, attempt, fence),
    )
    return HttpTaskRequest(execution_id, attempt, fence, timestamp)
