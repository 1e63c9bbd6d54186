"""URLs wheel sends requests to on a tenant's behalf: webhooks and HTTP tasks.

A tenant chooses them, so they are checked where they enter: absolute
http(s), a host, no credentials (secrets never travel in URLs) and no
fragment. Where they may lead is checked at send time (`wheel.notify.egress`).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from wheel.errors import InvalidArgument

MAX_URL_LENGTH = 2048


def check_webhook_url(field: str, url: str) -> str:
    """`url` if it is an absolute http(s) URL wheel may POST to; InvalidArgument naming `field`.

    Credentials in the URL are refused: secrets never travel in URLs (the
    signature authenticates wheel to the receiver instead).
    """
    if len(url) > MAX_URL_LENGTH:
        raise InvalidArgument(field, f"longer than {MAX_URL_LENGTH} characters")
    if any(c.isspace() or not c.isprintable() for c in url):
        raise InvalidArgument(field, "must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidArgument(field, f"not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidArgument(field, "must start with http:// or https://")
    if not parts.hostname:
        raise InvalidArgument(field, "names no host")
    if parts.username is not None or parts.password is not None:
        raise InvalidArgument(
            field, "must not carry credentials: receivers check the Wheel-Signature header"
        )
    if parts.fragment:
        raise InvalidArgument(field, "must not have a #fragment")
    if port == 0:
        raise InvalidArgument(field, "port 0 is not a port")
    return url


def literal_address(url: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address a URL names literally, or None when it names a host."""
    host = urlsplit(url).hostname or ""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None
