"""Where wheel may send a tenant's requests: no link-local, metadata or unspecified addresses.

    policy = EgressPolicy.of(config.denied_networks)
    policy.admit("http.url", url)         # at create: InvalidArgument naming the field
    target = policy.target(url)           # at send: EgressRefused, given up at once

A webhook or HTTP task URL is the tenant's to choose, so it must not reach
what only the node can: the cloud metadata service (169.254.169.254 and its
kin) hands out the node's credentials, and in a cluster the other services
trust whoever reaches them. Every address a URL leads to is checked, literal
or resolved, and the connection goes to the address that was checked (aiohttp
connects to what its resolver returns, so a name cannot resolve to one
address for the check and another for the request). The URL is read once, by
`wheel.model.urls.parse_url`, both when it is created and when it is sent, so
a URL refused at send was refused at create (unless it was stored before, or
the denied networks changed). An IPv6 address that carries an IPv4 one
(mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, IPv4-compatible
`::a.b.c.d`, 6to4 `2002:AABB:CCDD::`) is denied when either is. Operators of
a shared deployment add their private ranges to the denied networks.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from wheel._version import __distribution__, __version__
from wheel.errors import InvalidArgument
from wheel.model.notifications import DEFAULT_DENIED
from wheel.model.urls import Address, Target, parse_url

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")


class EgressRefused(OSError):
    """wheel will not send to a URL: it leads to a denied address, or it cannot be read as
    the sender reads it (an OSError, as resolvers raise)."""


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    denied: tuple[Network, ...]

    @classmethod
    def of(cls, networks: Iterable[str]) -> EgressPolicy:
        """From CIDR strings; ValueError names the one that is not a network."""
        return cls(tuple(ipaddress.ip_network(n, strict=False) for n in networks))

    def check(self, host: str, address: Address | str) -> None:
        """Raise EgressRefused if `address` (which `host` led to) is denied."""
        given = ipaddress.ip_address(address) if isinstance(address, str) else address
        for ip in _reached(given):
            for network in self.denied:
                if ip.version == network.version and ip in network:
                    where = f"{host} is" if host == str(ip) else f"{host} leads to {ip},"
                    raise EgressRefused(f"{where} in the denied network {network}")

    def target(self, url: str) -> Target:
        """At send: the URL as it is sent; EgressRefused if it cannot be read as a URL wheel
        sends to or names a denied address (a name's addresses are checked as it resolves)."""
        try:
            target = parse_url("url", url)
        except InvalidArgument as exc:
            raise EgressRefused(exc.reason) from None
        if target.address is not None:
            self.check(target.host, target.address)
        return target

    def admit(self, field: str, url: str) -> Target:
        """At create: `target`'s refusals as InvalidArgument naming `field` (a name is not
        resolved now: what it leads to then may change, and is checked at send)."""
        target = parse_url(field, url)
        if target.address is not None:
            try:
                self.check(target.host, target.address)
            except EgressRefused as exc:
                raise InvalidArgument(field, f"wheel sends nothing there: {exc}") from None
        return target


DEFAULT_EGRESS = EgressPolicy.of(DEFAULT_DENIED)
"""What a node denies unless its operator says otherwise (`notify_deny_networks`)."""


def _reached(ip: Address) -> tuple[Address, ...]:
    """`ip`, and the IPv4 address an IPv6 one carries, which a connection to it may reach."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return (ip,)
    packed = int(ip) & 0xFFFFFFFF
    if ip.ipv4_mapped is not None:
        return (ip, ip.ipv4_mapped)
    if ip in _NAT64 or (ip in _COMPATIBLE and packed > 1):  # not :: and ::1 themselves
        return (ip, ipaddress.IPv4Address(packed))
    if ip.sixtofour is not None:
        return (ip, ip.sixtofour)
    return (ip,)


def checked_session(
    policy: EgressPolicy,
    *,
    limit: int,
    limit_per_host: int = 0,
    timeout: aiohttp.ClientTimeout | None = None,
) -> aiohttp.ClientSession:
    """A client session whose every connection goes to an address `policy` allows."""
    connector = aiohttp.TCPConnector(
        resolver=CheckedResolver(policy), limit=limit, limit_per_host=limit_per_host
    )
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout or aiohttp.ClientTimeout(total=None),
        headers={"User-Agent": f"{__distribution__}/{__version__}"},
        trust_env=False,  # no proxy from the environment: the egress check must hold
    )


class CheckedResolver(AbstractResolver):
    """Resolves as usual, then refuses the name if any address it leads to is denied.

    Refusing the whole name (rather than dropping the denied addresses) keeps
    the outcome the same whichever address the system would have tried first.
    """

    def __init__(self, policy: EgressPolicy, inner: AbstractResolver | None = None) -> None:
        self._policy = policy
        self._inner = inner or DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        for result in results:
            self._policy.check(host, result["host"].split("%", 1)[0])
        return results

    async def close(self) -> None:
        await self._inner.close()
