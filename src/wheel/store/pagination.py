"""Opaque keyset-pagination tokens.

A page token is the sort key of the last row returned, so the next page is
"rows after this key": stable under concurrent inserts (no row is repeated,
no row that existed before is skipped), unlike OFFSET.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from datetime import datetime

from wheel.errors import InvalidArgument

MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100
_MAX_TOKEN = 200
"""Issued tokens are ~90 characters; anything longer is not one (and is not parsed)."""


def page_size(requested: int) -> int:
    """0 means the default; otherwise 1..MAX_PAGE_SIZE."""
    if requested == 0:
        return DEFAULT_PAGE_SIZE
    if not 1 <= requested <= MAX_PAGE_SIZE:
        raise InvalidArgument("page_size", f"{requested} is not in 1-{MAX_PAGE_SIZE}")
    return requested


_ASCENDING = "asc"


def encode(instant: datetime, ident: uuid.UUID, *, oldest_first: bool = False) -> str:
    """A token for the rows after this key; it remembers the order it was issued in."""
    key: list[str] = [instant.isoformat(), str(ident)]
    if oldest_first:
        key.append(_ASCENDING)
    raw = json.dumps(key).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(token: str, *, oldest_first: bool = False) -> tuple[datetime, uuid.UUID] | None:
    """The key a token names; None for the empty token (the first page). A token from a
    listing in the other order is refused: its key means the opposite there."""
    if not token:
        return None
    if len(token) > _MAX_TOKEN:
        raise InvalidArgument("page_token", "not a token this server issued")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        instant_text, ident_text, *order = json.loads(raw)
        instant = datetime.fromisoformat(instant_text)
        ident = uuid.UUID(ident_text)
    except (
        binascii.Error,
        ValueError,
        TypeError,
        AttributeError,
        UnicodeDecodeError,
        RecursionError,
    ):
        raise InvalidArgument("page_token", "not a token this server issued") from None
    if instant.tzinfo is None or order not in ([], [_ASCENDING]):
        raise InvalidArgument("page_token", "not a token this server issued")
    if bool(order) != oldest_first:
        raise InvalidArgument("page_token", "from a listing in the other order (oldest_first)")
    return instant, ident


_BY_NAME = "name"


def encode_text(key: str) -> str:
    """A token for the rows after this text key (listings ordered by name)."""
    raw = json.dumps([_BY_NAME, key]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_text(token: str) -> str:
    """The text key an `encode_text` token names; InvalidArgument for anything else."""
    if len(token) > 4 * _MAX_TOKEN:  # a name is up to 200 characters
        raise InvalidArgument("page_token", "not a token this server issued")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        kind, key = json.loads(raw)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError, RecursionError):
        raise InvalidArgument("page_token", "not a token this server issued") from None
    if kind != _BY_NAME or not isinstance(key, str):
        raise InvalidArgument("page_token", "not a token this server issued")
    return key
