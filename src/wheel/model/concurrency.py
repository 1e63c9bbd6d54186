"""Concurrency keys: at most `limit` of a tenant's runs with one key in flight at once.

    Policies(concurrency_key="billing", concurrency_limit=1)
    Policies(concurrency_key_field="customer", concurrency_limit=2)  # the payload's field

A job names its key, or the top-level field of its JSON payload the key is read from
(a string, or an integer written in digits). The key is resolved when a run is made and
kept on the run (`executions.concurrency_key`; the store resolves it with the same rule,
`wheel_concurrency_key`), so a run in flight is counted under the key it was claimed
with even if the job is edited meanwhile; a pending run takes the edited job's key.

Every claim, on any node, holds a run with a key back while the tenant has its job's
`limit` runs with that key dispatched or running, whatever their job ('at_key_limit':
left pending, claimed once the key frees). Keys are per tenant: one tenant's 'billing'
never counts against another's. Runs without a key cost the claim nothing more.
"""

from __future__ import annotations

import json
import re

from wheel.errors import InvalidArgument

MAX_KEY_LENGTH = 200
MAX_LIMIT = 100_000

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Unicode's control characters (category Cc), as `wheel.model.jobs.check_text` refuses."""


def check_key_text(field: str, key: str) -> None:
    """A key (or a field name) is stored and shown: bounded, no control characters."""
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidArgument(field, f"longer than {MAX_KEY_LENGTH} characters")
    if _CONTROL.search(key):
        raise InvalidArgument(field, "must not contain control characters")


def check_policies(key: str, key_field: str, limit: int) -> None:
    """Exactly one of a key and a key field, with a limit of 1 to MAX_LIMIT; or none of
    the three. InvalidArgument names the field that is wrong."""
    if key and key_field:
        raise InvalidArgument(
            "policies.concurrency_key_field",
            "give a concurrency key or the payload field it is read from, not both",
        )
    if key:
        if not key.strip():
            raise InvalidArgument("policies.concurrency_key", "must not be blank")
        check_key_text("policies.concurrency_key", key)
    if key_field:
        check_key_text("policies.concurrency_key_field", key_field)
    if not 0 <= limit <= MAX_LIMIT:
        raise InvalidArgument("policies.concurrency_limit", f"{limit} is not in 1-{MAX_LIMIT}")
    if (key or key_field) and limit == 0:
        raise InvalidArgument(
            "policies.concurrency_limit", "required with a concurrency key (1 or more)"
        )
    if limit and not (key or key_field):
        raise InvalidArgument(
            "policies.concurrency_key",
            "a concurrency limit needs a key (concurrency_key or concurrency_key_field)",
        )


def key_from_payload(payload: bytes, key_field: str) -> str:
    """The key a run of a job with this payload holds: its top-level `key_field`, a string
    (as it is) or an integer (its digits). InvalidArgument('payload') otherwise."""
    try:
        document = json.loads(payload.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise InvalidArgument(
            "payload",
            f"must be a JSON object: the concurrency key is read from its field {key_field!r}",
        ) from None
    if not isinstance(document, dict):
        raise InvalidArgument(
            "payload",
            f"must be a JSON object: the concurrency key is read from its field {key_field!r}",
        )
    if key_field not in document:
        raise InvalidArgument(
            "payload", f"has no field {key_field!r} to read the concurrency key from"
        )
    value = document[key_field]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidArgument(
            "payload", f"field {key_field!r} must be a string or an integer (the concurrency key)"
        )
    key = value if isinstance(value, str) else str(value)
    if not key.strip():
        raise InvalidArgument("payload", f"field {key_field!r} is blank: no concurrency key")
    check_key_text(f"payload.{key_field}", key)
    if b"\\u0000" in payload:
        # Postgres's jsonb, which reads the key in the store, refuses NUL anywhere.
        raise InvalidArgument("payload", "must not hold \\u0000 (the store reads it as jsonb)")
    return key


def resolved_key(payload: bytes, key: str, key_field: str, limit: int) -> str | None:
    """The key a run of a job with these policies and payload holds (None: no key)."""
    if limit == 0:
        return None
    return key if key else key_from_payload(payload, key_field)
