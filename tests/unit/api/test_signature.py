"""The Wheel-Signature header: made by wheel, checked by receivers."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from wheel.api.signature import sign, verify
from wheel.errors import BadSignature

SECRET = "whsec_" + "ab" * 32
BODY = b'{"id":"n-1","type":"execution.dead"}'
NOW = 1_900_000_000


def test_the_header_is_hmac_sha256_of_the_timestamp_and_the_body() -> None:
    header = sign([SECRET], BODY, NOW)
    expected = hmac.new(SECRET.encode(), f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert header == f"t={NOW},v1={expected}"


def test_a_receiver_accepts_what_was_signed_and_learns_when() -> None:
    assert verify(SECRET, sign([SECRET], BODY, NOW), BODY, now=NOW + 10) == NOW


@pytest.mark.parametrize(
    ("secret", "body", "reason"),
    [
        ("whsec_other", BODY, "no v1 signature matches"),
        (SECRET, BODY + b" ", "no v1 signature matches"),
        (SECRET, BODY.replace(b"dead", b"fine"), "no v1 signature matches"),
    ],
)
def test_another_secret_or_a_changed_body_is_refused(secret: str, body: bytes, reason: str) -> None:
    with pytest.raises(BadSignature, match=reason):
        verify(secret, sign([SECRET], BODY, NOW), body, now=NOW)


def test_a_replay_after_the_tolerance_is_refused_and_so_is_a_future_stamp() -> None:
    header = sign([SECRET], BODY, NOW)
    verify(SECRET, header, BODY, now=NOW + 300)
    with pytest.raises(BadSignature, match="301 s from now"):
        verify(SECRET, header, BODY, now=NOW + 301)
    with pytest.raises(BadSignature, match="beyond the 300 s tolerance"):
        verify(SECRET, header, BODY, now=NOW - 400)
    verify(SECRET, header, BODY, now=NOW + 3000, tolerance_s=3600)


def test_the_timestamp_is_signed_so_it_cannot_be_moved_forward() -> None:
    header = sign([SECRET], BODY, NOW)
    moved = header.replace(f"t={NOW}", f"t={NOW + 1000}")
    with pytest.raises(BadSignature, match="no v1 signature matches"):
        verify(SECRET, moved, BODY, now=NOW + 1000)


def test_after_a_rotation_either_secret_verifies() -> None:
    header = sign(["whsec_new", "whsec_old"], BODY, NOW)
    assert header.count("v1=") == 2
    assert verify("whsec_new", header, BODY, now=NOW) == NOW
    assert verify("whsec_old", header, BODY, now=NOW) == NOW
    with pytest.raises(BadSignature):
        verify("whsec_neither", header, BODY, now=NOW)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("", "no t= timestamp"),
        ("v1=abc", "no t= timestamp"),
        (f"t={NOW}", "no v1= signature"),
        ("t=yesterday,v1=abc", "is not a Unix time"),
    ],
)
def test_a_malformed_header_says_what_is_wrong(header: str, reason: str) -> None:
    with pytest.raises(BadSignature, match=reason):
        verify(SECRET, header, BODY, now=NOW)


def test_signing_needs_a_secret() -> None:
    with pytest.raises(ValueError, match="no secret"):
        sign([], BODY, NOW)
