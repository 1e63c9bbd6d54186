"""URLs wheel sends requests to on a tenant's behalf: webhooks and HTTP tasks.

A tenant chooses them, so they are checked where they enter and again where
they leave, by one reading of the URL:

- `check_webhook_url`, in the model's constructors: the shape (absolute
  http(s), a host, no credentials, as secrets never travel in URLs, no
  fragment). A stored URL always loads, so this never grows stricter.
- `parse_url`: the URL as wheel's HTTP client (aiohttp, through yarl) reads
  it, and the host it will connect to. The API runs it when a URL is created
  or changed, and the senders run it before every request
  (`wheel.notify.egress.EgressPolicy`), so what is refused at create is what
  would be refused at send, and the address checked is the address used.

An IPv4 address is taken in one spelling only, four decimal numbers
(`169.254.169.254`). Browsers and the C library also read `2852039166`,
`0xa9.254.43518`, `0251.0376.0251.0376`, `127.1` and a trailing dot as
addresses; aiohttp refuses them only when sending, and the egress check would
see a host name, not the address. So a host whose last label is a number is
an address and must be written canonically (the rule of the WHATWG URL
standard); a name is letters, digits, `-` and `_` in dot-separated labels,
IDNA-encoded as yarl encodes it (so 127.0.0.1 written in full-width digits
is `127.0.0.1`, and checked as such).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import yarl

from wheel.errors import InvalidArgument

MAX_URL_LENGTH = 2048
MAX_HOST_LENGTH = 253

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_NUMBER = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")
"""A label the WHATWG URL parser reads as a number: a host ending in one is an IPv4 address."""
_LABEL = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?")


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


@dataclass(frozen=True, slots=True)
class Target:
    """A URL as wheel's HTTP client reads it: what is sent, and where it connects."""

    url: yarl.URL
    """What the request is made with (aiohttp takes it as it is, without reading it again)."""
    host: str
    """The host connected to: lower case, IDNA-encoded, an IPv6 address without brackets."""
    address: Address | None
    """The host as an IP address when it is one: no resolver is asked, so it is checked
    here (a name's addresses are checked when it resolves)."""


def parse_url(field: str, url: str) -> Target:
    """The URL as it will be sent, if wheel may send to it; InvalidArgument naming `field`
    and the reason otherwise. No address is judged here: that is the egress policy's."""
    if "\\" in url:  # a slash to browsers, an error to yarl's authority, a path to urlsplit
        raise InvalidArgument(field, "must not contain a backslash (write it %5C)")
    check_webhook_url(field, url)
    try:
        parsed = yarl.URL(url)
        port = parsed.explicit_port
    except Exception as exc:  # not only ValueError: yarl raises IndexError for http://[]@
        reason = str(exc) if isinstance(exc, ValueError) else "it cannot be read"
        raise InvalidArgument(field, f"not a URL: {reason}") from None
    # The shape again, as yarl reads it: two parsers must not disagree about a URL.
    if parsed.scheme not in ("http", "https") or not parsed.absolute:
        raise InvalidArgument(field, "must start with http:// or https://")
    if parsed.raw_user is not None or parsed.raw_password is not None:
        raise InvalidArgument(
            field, "must not carry credentials: receivers check the Wheel-Signature header"
        )
    if parsed.raw_fragment:
        raise InvalidArgument(field, "must not have a #fragment")
    if port == 0:
        raise InvalidArgument(field, "port 0 is not a port")
    host = parsed.raw_host or ""
    return Target(parsed, host, _host_address(field, host))


def _host_address(field: str, host: str) -> Address | None:
    """The host's IP address, None for a name; InvalidArgument for a host that is neither."""
    if not host:
        raise InvalidArgument(field, "names no host")
    if "%" in host:
        raise InvalidArgument(field, "the host must not be percent-encoded or carry an IPv6 zone")
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise InvalidArgument(field, f"{host!r} is not an IPv6 address") from None
    labels = host.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()  # a name may end in a dot (fully qualified); an address may not
    if _NUMBER.fullmatch(labels[-1]):
        try:
            address = ipaddress.IPv4Address(host)
        except ValueError:
            raise InvalidArgument(
                field,
                f"{host!r} is read as an IPv4 address: write it as four decimal numbers,"
                " a.b.c.d, with no leading zeros and no trailing dot",
            ) from None
        return address
    if len(host) > MAX_HOST_LENGTH or not all(_LABEL.fullmatch(label) for label in labels):
        raise InvalidArgument(
            field, f"{host!r} is not a host name (letters, digits, '-' and '_' in labels)"
        )
    return None
