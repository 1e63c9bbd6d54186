"""Where notifications may go: never link-local, metadata or unspecified addresses."""

from __future__ import annotations

import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

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
