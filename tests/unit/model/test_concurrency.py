"""Concurrency keys: which policies are accepted, and the key a run holds."""

from __future__ import annotations

import pytest

from wheel.errors import InvalidArgument
from wheel.model.concurrency import MAX_LIMIT, key_from_payload, resolved_key
from wheel.model.jobs import JobSpec, Policies, Schedule, ScheduleKind


def spec(payload: bytes, **policies: object) -> JobSpec:
    return JobSpec(
        name="charge",
        task_type="billing.charge",
        schedule=Schedule(kind=ScheduleKind.NOW),
        payload=payload,
        policies=Policies(**policies),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("policies", "field", "reason"),
    [
        ({"concurrency_limit": 1}, "policies.concurrency_key", "needs a key"),
        ({"concurrency_key": "billing"}, "policies.concurrency_limit", "required"),
        ({"concurrency_key_field": "customer"}, "policies.concurrency_limit", "required"),
        ({"concurrency_key": "billing", "concurrency_key_field": "customer",
          "concurrency_limit": 1}, "policies.concurrency_key_field", "not both"),
        ({"concurrency_key": "billing", "concurrency_limit": MAX_LIMIT + 1},
         "policies.concurrency_limit", f"is not in 1-{MAX_LIMIT}"),
        ({"concurrency_key": "billing", "concurrency_limit": -1},
         "policies.concurrency_limit", "is not in"),
        ({"concurrency_key": "k" * 201, "concurrency_limit": 1}, "policies.concurrency_key",
         "longer than 200"),
        ({"concurrency_key": "bill\ning", "concurrency_limit": 1}, "policies.concurrency_key",
         "control characters"),
        ({"concurrency_key": "  ", "concurrency_limit": 1}, "policies.concurrency_key", "blank"),
        ({"concurrency_key_field": "cust\x00", "concurrency_limit": 1},
         "policies.concurrency_key_field", "control characters"),
    ],
)  # fmt: skip
def test_policies_without_exactly_one_key_and_a_limit_are_refused(
    policies: dict[str, object], field: str, reason: str
) -> None:
    with pytest.raises(InvalidArgument) as raised:
        Policies(**policies)  # type: ignore[arg-type]
    assert raised.value.field == field
    assert reason in str(raised.value)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"", "must be a JSON object"),
        (b"[1, 2]", "must be a JSON object"),
        (b'"acme"', "must be a JSON object"),
        (b"\xff\xfe", "must be a JSON object"),
        (b'{"to": "ops"}', "has no field 'customer'"),
        (b'{"customer": 1.5}', "must be a string or an integer"),
        (b'{"customer": true}', "must be a string or an integer"),
        (b'{"customer": null}', "must be a string or an integer"),
        (b'{"customer": {"id": 1}}', "must be a string or an integer"),
        (b'{"customer": ""}', "blank"),
        (b'{"customer": "a\\nb"}', "control characters"),
        (b'{"customer": "' + b"x" * 201 + b'"}', "longer than 200"),
        (b'{"customer": "acme", "note": "\\u0000"}', "must not hold"),
    ],
)
def test_a_payload_that_holds_no_key_is_refused_naming_the_payload(
    payload: bytes, reason: str
) -> None:
    with pytest.raises(InvalidArgument) as raised:
        spec(payload, concurrency_key_field="customer", concurrency_limit=1)
    assert raised.value.field.startswith("payload")
    assert reason in str(raised.value)


def test_the_key_a_run_holds() -> None:
    assert key_from_payload(b'{"customer": "acme", "n": 1}', "customer") == "acme"
    assert key_from_payload(b'{"customer": 42}', "customer") == "42"
    assert key_from_payload(b'{"customer": -7}', "customer") == "-7"
    assert resolved_key(b'{"customer": 42}', "", "customer", 2) == "42"
    assert resolved_key(b"anything", "billing", "", 1) == "billing"
    assert resolved_key(b"anything", "", "", 0) is None
    # Accepted as a job: one key and a limit.
    assert spec(b'{"customer": "acme"}', concurrency_key_field="customer",
                concurrency_limit=3).policies.concurrency_limit == 3  # fmt: skip
    assert spec(b"", concurrency_key="billing", concurrency_limit=1).policies.concurrency_key
