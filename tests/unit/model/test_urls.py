"""The one reading of a webhook or HTTP task URL: as wheel's HTTP client reads it, or refused
naming the field and the reason."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wheel.errors import InvalidArgument
from wheel.model.urls import parse_url


@pytest.mark.parametrize(
    ("url", "host", "address"),
    [
        ("https://hooks.example.com/wheel", "hooks.example.com", None),
        ("https://Hooks.Example.COM./x", "hooks.example.com.", None),
        ("http://svc_a.internal:8080/", "svc_a.internal", None),
        ("https://bücher.example/", "xn--bcher-kva.example", None),
        ("http://127.0.0.1:8080/hook?team=ops", "127.0.0.1", "127.0.0.1"),
        ("https://[2001:DB8:0::1]:8443/x", "2001:db8::1", "2001:db8::1"),
        ("http://[::ffff:169.254.169.254]/", "::ffff:a9fe:a9fe", "::ffff:a9fe:a9fe"),
        # Read as the client reads them (IDNA maps full-width forms): an address, checked.
        ("http://\uff11\uff12\uff17.0.0.1/", "127.0.0.1", "127.0.0.1"),
        ("http://127。0。0。1/", "127.0.0.1", "127.0.0.1"),
        ("http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", "localhost", None),
    ],
)
def test_a_url_is_read_as_the_client_reads_it(url: str, host: str, address: str | None) -> None:
    target = parse_url("url", url)
    assert target.host == host
    assert target.url.raw_host == host, "the host checked is the host connected to"
    assert target.address == (None if address is None else ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "host",
    [
        "2852039166",  # 169.254.169.254 as one decimal number
        "2130706433",  # 127.0.0.1
        "0",
        "127.1",
        "169.254.43518",
        "0x7f.1",
        "0x7f000001",
        "0xA9.0xFE.0xA9.0xFE",
        "0177.0.0.1",
        "0251.0376.0251.0376",
        "127.0.0.01",
        "169.254.169.254.",
        "127.0.0.1.",
        "1.2.3.4.5",
        "256.0.0.1",
        "hooks.example.123",
        "hooks.0x1",
        "\uff10x7f.1",  # full-width, 0x7f.1 once IDNA has mapped it
    ],
)
def test_an_address_written_any_way_but_a_b_c_d_is_refused(host: str) -> None:
    with pytest.raises(InvalidArgument, match=r"read as an IPv4 address: write it as four") as e:
        parse_url("http.url", f"http://{host}:8080/run")
    assert e.value.field == "http.url"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://a@169.254.169.254/", "must not carry credentials"),
        ("http://@169.254.169.254/", "must not carry credentials"),
        ("http://u:p@hooks.example.com/", "must not carry credentials"),
        ("http://hooks.example.com\\@169.254.169.254/", "must not contain a backslash"),
        ("http://169.254.169.254\\.hooks.example.com/", "must not contain a backslash"),
        ("http://hooks.example.com/a\\b", "must not contain a backslash"),
        ("http://%31%32%37.0.0.1/", "must not be percent-encoded"),
        ("http://hooks%2eexample.com/", "must not be percent-encoded"),
        ("http://[fe80::1%25eth0]/", "carry an IPv6 zone"),
        ("http://[127.0.0.1]/", "not a URL"),
        ("http:///path", "names no host"),
        ("http://:8080/", "names no host"),
        ("http://?x=1", "names no host"),
        ("http://hooks.example.com:0/", "port 0"),
        ("http://hooks.example.com:65536/", "not a URL"),
        ("http://ex*ample.com/", "is not a host name"),
        ("http://a..example.com/", "is not a host name"),
        ("http://.example.com/", "is not a host name"),
        ("http://-x.example.com/", "is not a host name"),
        ("http://" + "a" * 64 + ".example/", "is not a host name"),
        ("http://hooks.example.com/\t", "control characters"),
        ("http://hooks\u200b.example.com/", "control characters"),
        ("gopher://hooks.example.com/", "must start with http:// or https://"),
        ("//hooks.example.com/", "must start with http:// or https://"),
        ("https://hooks.example.com/#frag", "must not have a #fragment"),
    ],
)
def test_a_url_the_client_would_not_send_as_checked_is_refused(url: str, reason: str) -> None:
    with pytest.raises(InvalidArgument, match=reason) as caught:
        parse_url("policies.notify_url", url)
    assert caught.value.field == "policies.notify_url"


_PART = st.integers(0, 2**32 - 1).flatmap(
    lambda n: st.sampled_from([str(n), hex(n), f"0{n:o}", f"0X{n:X}"])
)


@given(
    parts=st.lists(_PART, min_size=1, max_size=4),
    dot=st.sampled_from(["", "."]),
)
def test_no_host_the_c_library_reads_as_an_address_is_read_as_another(
    parts: list[str], dot: str
) -> None:
    """The C library's inet_aton (what getaddrinfo does with a numeric host) is the
    reference: a host it reads as an address is refused, or read as the same address."""
    host = ".".join(parts) + dot
    try:
        target = parse_url("url", f"http://{host}/")
    except InvalidArgument:
        return
    assert target.address == ipaddress.IPv4Address(socket.inet_aton(host))
    assert str(target.address) == host, "only a.b.c.d is read as an address"


_PIECES = st.sampled_from(
    [*"htps:/\\@[]%.0123456789abcdefx:?#-_ \t\n\x00", "\uff11", "\u3002", "\u00fc", "\u200b",
     "xn--", "::ffff:", "169.254.169.254", "//", "[::1]"]
)  # fmt: skip


@given(head=st.sampled_from(["http://", "https://", ""]), tail=st.lists(_PIECES, max_size=24))
def test_any_text_is_read_or_refused_naming_the_field(head: str, tail: list[str]) -> None:
    """Never another exception: the parser underneath raises IndexError for some input."""
    try:
        target = parse_url("url", head + "".join(tail))
    except InvalidArgument as exc:
        refused = exc
    else:
        assert target.host == target.url.raw_host
        return
    assert refused.field == "url"


def test_an_empty_bracketed_host_is_not_a_url() -> None:
    with pytest.raises(InvalidArgument, match=r"^url: not a URL"):
        parse_url("url", "http://[]@")
