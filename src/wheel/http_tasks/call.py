"""One attempt of an HTTP task: the POST, and its answer read as an outcome.

    async with Caller(policy) as caller:
        answer = await caller.post(request, clock=time.time)

2xx is success. 4xx is REJECTED (dead, not retried) unless the job retries
client errors; 408, 425 and 429 say "later", so they are always retried.
Anything else fails and is retried by the job's policy: 5xx, 1xx and 3xx
(redirects are not followed: the egress check holds for the URL that was
checked), no connection, no answer by the deadline. A URL that leads to a
denied address, or that the sender cannot read as a URL it sends to (one
stored before the check at create refused it), is REJECTED: no retry would
change the answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import aiohttp

from wheel.api import signature
from wheel.errors import type_name
from wheel.model.executions import Outcome
from wheel.notify.egress import EgressPolicy, EgressRefused, checked_session

RETRIED_CLIENT_ERRORS = frozenset({408, 425, 429})
_ERROR_LIMIT = 300
_ANSWER_LIMIT = 64 * 1024
"""How much of an answer's body is read: enough for an error's first line."""


@dataclass(frozen=True, slots=True)
class Request:
    """What one attempt sends."""

    url: str
    body: bytes
    execution_id: str
    job_id: str
    attempt: int
    fence: int
    scheduled_for: datetime
    deadline: datetime
    secrets: tuple[str, ...]
    retry_client_errors: bool = False
    traceparent: str | None = None

    def headers(self, timestamp: int) -> dict[str, str]:
        signed = signature.sign(
            self.secrets,
            self.body,
            timestamp,
            bound=signature.bound(self.execution_id, self.attempt, self.fence),
        )
        sent = {
            "Content-Type": content_type(self.body),
            signature.IDEMPOTENCY_KEY: self.execution_id,
            signature.EXECUTION_ID: self.execution_id,
            signature.JOB_ID: self.job_id,
            signature.ATTEMPT: str(self.attempt),
            signature.FENCE: str(self.fence),
            signature.SCHEDULED_FOR: self.scheduled_for.isoformat().replace("+00:00", "Z"),
            signature.DEADLINE: self.deadline.isoformat().replace("+00:00", "Z"),
            signature.HEADER: signed,
        }
        if self.traceparent:
            sent[signature.TRACEPARENT] = self.traceparent
        return sent


@dataclass(frozen=True, slots=True)
class Answer:
    """How the attempt went."""

    outcome: Outcome
    error: str | None = None
    status_code: int | None = None
    error_type: str | None = None
    """A failure's class, for its span: the HTTP status (`503`), `timeout`, or the error's
    type (`ConnectionRefusedError`, `wheel.notify.egress.EgressRefused`)."""


def content_type(body: bytes) -> str:
    """application/json for a JSON payload, application/octet-stream for anything else."""
    try:
        json.loads(body)
    except ValueError:
        return "application/octet-stream"
    return "application/json"


def outcome_of(status: int, retry_client_errors: bool) -> Outcome:
    if 200 <= status < 300:
        return Outcome.SUCCEEDED
    if 400 <= status < 500 and status not in RETRIED_CLIENT_ERRORS and not retry_client_errors:
        return Outcome.REJECTED
    return Outcome.FAILED


def _first_line(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    return text.splitlines()[0] if text else ""


class Caller:
    """Makes HTTP tasks' requests through one session, every address checked."""

    def __init__(self, policy: EgressPolicy, *, concurrency: int = 256) -> None:
        self._policy = policy
        self._concurrency = concurrency
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Caller:
        self._session = checked_session(self._policy, limit=self._concurrency)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, request: Request, *, clock: Callable[[], float] = time.time) -> Answer:
        """POST once, by the request's deadline; never raises for what the endpoint does."""
        assert self._session is not None, "use the Caller as an async context manager"
        now = clock()
        timeout_s = request.deadline.timestamp() - now
        if timeout_s <= 0:
            return Answer(
                Outcome.FAILED, "the deadline passed before the request was sent",
                error_type="timeout",
            )  # fmt: skip
        try:
            target = self._policy.target(request.url)
            async with self._session.post(
                target.url,
                data=request.body,
                headers=request.headers(int(now)),
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=timeout_s),
            ) as response:
                body = await response.content.read(_ANSWER_LIMIT)
                outcome = outcome_of(response.status, request.retry_client_errors)
                if outcome is Outcome.SUCCEEDED:
                    return Answer(outcome, None, response.status)
                error = f"HTTP {response.status}"
                if 300 <= response.status < 400:
                    error += " (redirects are not followed)"
                if line := _first_line(body):
                    error += f": {line}"
                return Answer(outcome, error[:_ERROR_LIMIT], response.status, str(response.status))
        except EgressRefused as exc:
            return Answer(Outcome.REJECTED, f"refused: {exc}"[:_ERROR_LIMIT], None, type_name(exc))
        except aiohttp.ClientConnectorError as exc:
            cause = type_name(exc.os_error)
            if isinstance(exc.os_error, EgressRefused):
                return Answer(Outcome.REJECTED, f"refused: {exc.os_error}"[:_ERROR_LIMIT], None,
                              cause)  # fmt: skip
            return Answer(Outcome.FAILED, f"cannot connect: {exc.os_error}"[:_ERROR_LIMIT], None,
                          cause)  # fmt: skip
        except TimeoutError:
            return Answer(Outcome.FAILED, f"no answer within {timeout_s:.3g} s (the deadline)",
                          None, "timeout")  # fmt: skip
        except aiohttp.InvalidURL as exc:  # what the parser let through and aiohttp did not
            return Answer(Outcome.REJECTED, f"refused: not a URL to send to: {exc}"[:_ERROR_LIMIT],
                          None, type_name(exc))  # fmt: skip
        except aiohttp.ClientError as exc:
            return Answer(Outcome.FAILED, f"{type(exc).__name__}: {exc}"[:_ERROR_LIMIT], None,
                          type_name(exc))  # fmt: skip
