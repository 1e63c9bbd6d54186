"""Where notifications may go: never link-local, metadata or unspecified addresses."""

from __future__ import annotations

import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from wheel.errors import InvalidArgument
from wheel.model.notifications import DEFAULT_DENIED
from wheel.notify.egress import CheckedResolver, EgressPolicy, EgressRefused

DEFAULT = EgressPolicy.of(DEFAULT_DENIED)


@pytest.mark.parametrize(
    "address",
    ["169.254.169.254", "169.254.170.2", "100.100.100.200", "0.0.0.0", "fe80::1",
     "fd00:ec2::254", "::ffff:169.254.169.254", "::", "224.0.0.1", "255.255.255.255"],
)  # fmt: skip
def test_metadata_link_local_and_unspecified_addresses_are_denied(address: str) -> None:
    with pytest.raises(EgressRefused, match="in the denied network"):
        DEFAULT.check("hooks.example", address)


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "192.168.0.7", "203.0.113.9", "::1"])
def test_loopback_private_and_public_addresses_are_allowed_by_default(address: str) -> None:
    DEFAULT.check("hooks.example", address)


def test_an_operator_can_deny_private_ranges() -> None:
    shared = EgressPolicy.of([*DEFAULT_DENIED, "10.0.0.0/8", "127.0.0.0/8"])
    with pytest.raises(EgressRefused, match=r"10\.0\.0\.0/8"):
        shared.check("internal", "10.9.9.9")
    with pytest.raises(EgressRefused):
        shared.check("localhost", "127.0.0.1")
    shared.check("public", "203.0.113.9")


def test_a_bad_network_is_refused_when_the_policy_is_made() -> None:
    with pytest.raises(ValueError, match="does not appear to be"):
        EgressPolicy.of(["10.0.0.0/33"])


class _Answers(AbstractResolver):
    """The system resolver's collaborator role: answers as scripted."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host=a, port=port, family=family, proto=0, flags=0)
            for a in self.addresses
        ]

    async def close(self) -> None:
        pass


async def test_a_name_that_resolves_to_any_denied_address_is_refused() -> None:
    resolver = CheckedResolver(DEFAULT, _Answers("203.0.113.9", "169.254.169.254"))
    with pytest.raises(EgressRefused, match=r"metadata\.example leads to 169\.254\.169\.254"):
        await resolver.resolve("metadata.example", 80)


async def test_a_name_that_resolves_to_allowed_addresses_is_passed_through() -> None:
    resolver = CheckedResolver(DEFAULT, _Answers("203.0.113.9", "::1"))
    answers = await resolver.resolve("hooks.example", 443)
    assert [a["host"] for a in answers] == ["203.0.113.9", "::1"]


async def test_a_scoped_link_local_answer_is_refused() -> None:
    resolver = CheckedResolver(DEFAULT, _Answers("fe80::1%eth0"))
    with pytest.raises(EgressRefused, match="fe80::1"):
        await resolver.resolve("hooks.example", 443)


LOOPBACK_DENIED = EgressPolicy.of([*DEFAULT_DENIED, "127.0.0.0/8", "::1/128"])


@pytest.mark.parametrize(
    "address",
    ["64:ff9b::a9fe:a9fe", "::a9fe:a9fe", "2002:a9fe:a9fe::1", "::ffff:0.0.0.0"],
)
def test_an_ipv6_address_that_carries_a_denied_ipv4_one_is_denied(address: str) -> None:
    with pytest.raises(EgressRefused, match=r"leads to 169\.254\.169\.254|leads to 0\.0\.0\.0"):
        DEFAULT.check("hooks.example", address)


def test_the_loopback_and_unspecified_ipv6_addresses_are_not_read_as_ipv4() -> None:
    DEFAULT.check("hooks.example", "::1")  # not 0.0.0.1
    with pytest.raises(EgressRefused, match=r"^:: is in the denied network ::/128$"):
        DEFAULT.check("::", "::")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.0.0/16"),
        ("http://[::ffff:169.254.169.254]/", "169.254.0.0/16"),
        ("http://[::ffff:a9fe:a9fe]:80/", "169.254.0.0/16"),
        ("http://[64:ff9b::169.254.169.254]/", "169.254.0.0/16"),
        ("http://[fe80::1]:8080/", "fe80::/10"),
        ("http://[fd00:ec2::254]/", "fd00:ec2::254/128"),
        ("http://0.0.0.0:8080/", "0.0.0.0/8"),
        ("http://[::]:8080/", "::/128"),
        ("http://100.100.100.200/", "100.100.100.200/32"),
        ("http://" + ".".join(["\uff11\uff16\uff19", "\uff12\uff15\uff14"] * 2), "169.254.0.0/16"),
    ],
)
def test_a_denied_address_is_refused_at_create_naming_the_field(url: str, reason: str) -> None:
    with pytest.raises(InvalidArgument, match=f"wheel sends nothing there: .*{reason}") as e:
        DEFAULT.admit("http.url", url)
    assert e.value.field == "http.url"
    with pytest.raises(EgressRefused, match=reason):
        DEFAULT.target(url)


@pytest.mark.parametrize(
    "url",
    ["http://2852039166/", "http://169.254.169.254./", "http://0:8080/", "http://2130706433/",
     "http://127.1/", "http://0x7f.1/", "http://0177.0.0.1/", "http://a@169.254.169.254/",
     "http://[fe80::1%25eth0]/", "http://%31%32%37.0.0.1/", "http:///x"],
)  # fmt: skip
def test_what_is_refused_at_create_is_refused_at_send(url: str) -> None:
    """One reading for both: a URL stored before the check at create is refused at send
    (and so given up at once) for the same reason."""
    with pytest.raises(InvalidArgument) as at_create:
        LOOPBACK_DENIED.admit("url", url)
    with pytest.raises(EgressRefused) as at_send:
        LOOPBACK_DENIED.target(url)
    assert str(at_send.value) == at_create.value.reason


def test_loopback_is_refused_in_every_spelling_once_an_operator_denies_it() -> None:
    for url in ("http://127.0.0.1/", "http://127.0.0.2:9000/", "http://[::1]/",
                "http://[::ffff:127.0.0.1]/", "http://\uff11\uff12\uff17.0.0.1/"):  # fmt: skip
        with pytest.raises(InvalidArgument, match="wheel sends nothing there"):
            LOOPBACK_DENIED.admit("url", url)
    DEFAULT.admit("url", "http://127.0.0.1:9000/")  # allowed unless denied


def test_a_name_is_admitted_at_create_and_its_addresses_checked_when_it_resolves() -> None:
    target = LOOPBACK_DENIED.admit("url", "http://localhost:9000/hook")
    assert (target.host, target.address) == ("localhost", None)
    assert LOOPBACK_DENIED.target("https://hooks.example.com/x").host == "hooks.example.com"
