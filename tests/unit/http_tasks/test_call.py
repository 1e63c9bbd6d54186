"""One HTTP task attempt: what it sends, how its answer reads, and the receiver's check."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.answering import answering, refusing_url
from wheel.api.signature import verify_http_task
from wheel.errors import BadSignature
from wheel.http_tasks.call import Caller, Request, content_type, outcome_of
from wheel.model.executions import Outcome
from wheel.model.notifications import DEFAULT_DENIED
from wheel.notify.egress import EgressPolicy

T0 = datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
SECRET = "whsec_" + "ab" * 32


def request(**changes: object) -> Request:
    fields: dict[str, object] = {
        "url": "https://hooks.example.com/run",
        "body": b'{"to": "priya"}',
        "execution_id": "5f1c9a8e-0000-4000-8000-000000000001@20260329T013000Z",
        "job_id": "5f1c9a8e-0000-4000-8000-000000000001",
        "attempt": 2,
        "fence": 7,
        "scheduled_for": T0,
        "deadline": T0 + timedelta(minutes=5),
        "secrets": (SECRET,),
    }
    fields.update(changes)
    return Request(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "retry_client_errors", "outcome"),
    [
        (200, False, Outcome.SUCCEEDED),
        (204, False, Outcome.SUCCEEDED),
        (400, False, Outcome.REJECTED),
        (404, False, Outcome.REJECTED),
        (404, True, Outcome.FAILED),
        (408, False, Outcome.FAILED),
        (425, False, Outcome.FAILED),
        (429, False, Outcome.FAILED),
        (301, False, Outcome.FAILED),
        (500, False, Outcome.FAILED),
        (503, True, Outcome.FAILED),
        (102, False, Outcome.FAILED),
    ],
)
def test_an_answer_reads_as_an_outcome(
    status: int, retry_client_errors: bool, outcome: Outcome
) -> None:
    assert outcome_of(status, retry_client_errors) is outcome


def test_the_body_says_what_it_is() -> None:
    assert content_type(b'{"a": 1}') == "application/json"
    assert content_type(b"[1, 2]") == "application/json"
    assert content_type(b"\x00\xff binary") == "application/octet-stream"
    assert content_type(b"") == "application/octet-stream"


def test_headers_carry_the_run_and_a_signature_that_binds_it() -> None:
    sent = request().headers(int(T0.timestamp()))
    assert sent["Idempotency-Key"] == sent["Wheel-Execution-Id"]
    assert (sent["Wheel-Attempt"], sent["Wheel-Fence"]) == ("2", "7")
    assert sent["Wheel-Scheduled-For"] == "2026-03-29T01:30:00Z"
    assert sent["Wheel-Deadline"] == "2026-03-29T01:35:00Z"
    assert "traceparent" not in sent
    checked = verify_http_task(SECRET, sent, b'{"to": "priya"}', tolerance_s=10**10)
    assert (checked.attempt, checked.fence, checked.timestamp) == (2, 7, int(T0.timestamp()))
    lowered = {k.lower(): v for k, v in sent.items()}
    assert verify_http_task(SECRET, lowered, b'{"to": "priya"}', tolerance_s=10**10) == checked


@pytest.mark.parametrize(
    ("header", "value", "reason"),
    [
        ("Wheel-Fence", "8", "no v1 signature matches"),
        ("Wheel-Attempt", "1", "no v1 signature matches"),
        ("Wheel-Execution-Id", "another@20260329T013000Z", "no v1 signature matches"),
        ("Wheel-Fence", "seven", "must be integers"),
    ],
)
def test_a_changed_header_fails_the_check(header: str, value: str, reason: str) -> None:
    sent = {**request().headers(int(T0.timestamp())), header: value}
    with pytest.raises(BadSignature, match=reason):
        verify_http_task(SECRET, sent, b'{"to": "priya"}', tolerance_s=10**10)


def test_a_changed_body_an_old_request_and_a_missing_header_fail_the_check() -> None:
    sent = request().headers(int(T0.timestamp()))
    with pytest.raises(BadSignature, match="no v1 signature matches"):
        verify_http_task(SECRET, sent, b'{"to": "mallory"}', tolerance_s=10**10)
    with pytest.raises(BadSignature, match="beyond the 300 s tolerance"):
        verify_http_task(SECRET, sent, b'{"to": "priya"}')
    without = {k: v for k, v in sent.items() if k != "Wheel-Signature"}
    with pytest.raises(BadSignature, match="no Wheel-Signature header"):
        verify_http_task(SECRET, without, b'{"to": "priya"}')


def test_a_rotation_signs_with_both_secrets() -> None:
    old = "whsec_" + "cd" * 32
    sent = request(secrets=(SECRET, old)).headers(int(T0.timestamp()))
    assert sent["Wheel-Signature"].count("v1=") == 2
    for secret in (SECRET, old):
        verify_http_task(secret, sent, b'{"to": "priya"}', tolerance_s=10**10)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://2852039166/", "read as an IPv4 address"),
        ("http://169.254.169.254./", "read as an IPv4 address"),
        ("http://0:8080/", "read as an IPv4 address"),
        ("http://2130706433/", "read as an IPv4 address"),
        ("http://127.1/", "read as an IPv4 address"),
        ("http://[::ffff:169.254.169.254]/", "in the denied network 169.254.0.0/16"),
        ("http://\uff11\uff12\uff17.0.0.1:9/", "in the denied network 127.0.0.0/8"),
    ],
)
async def test_a_url_that_cannot_be_sent_is_rejected_without_a_request(
    url: str, reason: str
) -> None:
    """Rejected (dead, no retry) before any connection: these never reach the network."""
    policy = EgressPolicy.of([*DEFAULT_DENIED, "127.0.0.0/8"])
    async with Caller(policy) as caller:
        answer = await caller.post(request(url=url), clock=lambda: T0.timestamp())
    assert answer.outcome is Outcome.REJECTED
    assert answer.error is not None
    assert answer.error.startswith("refused: ")
    assert reason in answer.error


def due_soon(url: str) -> Request:
    return request(url=url, deadline=datetime.now(UTC) + timedelta(seconds=5))


async def test_a_failed_post_says_its_class_of_error_for_its_span() -> None:
    async with answering([503, 200]) as url, Caller(EgressPolicy.of(())) as caller:
        busy = await caller.post(due_soon(url))
        assert (busy.outcome, busy.status_code, busy.error_type) == (Outcome.FAILED, 503, "503")
        ok = await caller.post(due_soon(url))
        assert (ok.outcome, ok.error_type) == (Outcome.SUCCEEDED, None)
        late = await caller.post(request(url=url))  # its deadline passed long ago
        assert (late.outcome, late.error_type) == (Outcome.FAILED, "timeout")
        refused = await caller.post(due_soon(refusing_url()))
        assert (refused.outcome, refused.error_type) == (Outcome.FAILED, "ConnectionRefusedError")
    async with Caller(EgressPolicy.of(["127.0.0.0/8"])) as denied:
        answer = await denied.post(due_soon(url))
        assert (answer.outcome, answer.error_type) == (
            Outcome.REJECTED, "wheel.notify.egress.EgressRefused",
        )  # fmt: skip
