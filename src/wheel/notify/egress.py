"""Where wheel may send a tenant's requests: no link-local, metadata or unspecified addresses.

A webhook URL is the tenant's to choose, so it must not reach what only the
node can: the cloud metadata service (169.254.169.254 and its kin) hands out
the node's credentials. Every address a URL leads to is checked, literal or
resolved, and the connection goes to the address that was checked (aiohttp
connects to what its resolver returns, so a name cannot resolve to one
address for the check and another for the request). Operators of a shared
deployment add their private ranges to the denied networks.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from wheel import __distribution__, __version__

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class EgressRefused(OSError):
    """An address a URL leads to is in a denied network (an OSError, as resolvers raise)."""

    def __init__(self, host: str, address: str, network: str) -> None:
        super().__init__(f"{host} leads to {address}, in the denied network {network}")
        self.host = host
        self.address = address
        self.network = network


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    denied: tuple[Network, ...]

    @classmethod
    def of(cls, networks: Iterable[str]) -> EgressPolicy:
        """From CIDR strings; ValueError names the one that is not a network."""
        return cls(tuple(ipaddress.ip_network(n, strict=False) for n in networks))

    def check(self, host: str, address: Address | str) -> None:
        """Raise EgressRefused if `address` (which `host` led to) is denied."""
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        for network in self.denied:
            if ip.version == network.version and ip in network:
                raise EgressRefused(host, str(ip), str(network))


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
