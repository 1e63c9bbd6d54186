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


def encode(instant: datetime, ident: uuid.UUID) -> str:
    raw = json.dumps([instant.isoformat(), str(ident)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(token: str) -> tuple[datetime, uuid.UUID] | None:
    """The key a token names; None for the empty token (the first page)."""
    if not token:
        return None
    if len(token) > _MAX_TOKEN:
        raise InvalidArgument("page_token", "not a token this server issued")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        instant_text, ident_text = json.loads(raw)
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
    if instant.tzinfo is None:
        raise InvalidArgument("page_token", "not a token this server issued")
    return instant, ident
