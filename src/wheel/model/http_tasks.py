"""HTTP tasks: a job whose task is a POST to a URL, run by the nodes, not by an executor.

Any language that can answer an HTTP request can be a wheel task. A node
POSTs the job's payload to the URL with the run's identity in headers and a
signature by the tenant's secret; a 2xx answer is success, a 4xx a failure
that is not retried (the endpoint refused the request: sending it again would
not change that) unless the job says otherwise, and anything else (5xx, no
answer in time, no connection) a failure retried under the job's policy.

The task type of an HTTP job is `wheel.http:<host>[:<port>]`, made from its
URL: breakers, the unserved and per-task-type figures then tell one endpoint
from another. Task types starting `wheel.` are wheel's own.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from wheel.errors import InvalidArgument
from wheel.model.urls import Address, check_webhook_url, parse_url

RESERVED_PREFIX = "wheel."
"""Task types starting with this are wheel's own: no job names one, no executor serves one."""
HTTP_TASK_PREFIX = "wheel.http:"
HTTP_POOL = "wheel.http"
"""Where the node queues HTTP tasks' due runs, whatever pool their job names: they wait
for the node's HTTP runner's credit, never for an executor's."""


@dataclass(frozen=True, slots=True)
class HttpTask:
    """Where a job's runs are POSTed, and whether a 4xx answer is retried."""

    url: str
    retry_client_errors: bool = False
    """Retry 4xx answers like 5xx ones (408 and 429 are always retried)."""

    def __post_init__(self) -> None:
        check_webhook_url("http.url", self.url)

    @property
    def task_type(self) -> str:
        """The task type of a job with this target: `wheel.http:` and the URL's host and port."""
        parts = urlsplit(self.url)
        host = (parts.hostname or "").lower()
        if ":" in host:  # an IPv6 literal keeps its brackets
            host = f"[{host}]"
        return f"{HTTP_TASK_PREFIX}{host}" + (f":{parts.port}" if parts.port else "")


def is_http_task_type(task_type: str) -> bool:
    return task_type.startswith(HTTP_TASK_PREFIX)


_HOST = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")
MAX_HOSTS = 100


def host_patterns(field: str, hosts: Iterable[str]) -> tuple[str, ...]:
    """A tenant's allowed hosts, checked: names (`api.example.com`), or `*.example.com` for
    any name under one; IP literals as written. Deduplicated, in order."""
    checked: list[str] = []
    for index, given in enumerate(hosts):
        host = given.strip().lower()
        if not host or len(host) > 253 or not _HOST.match(host.strip("[]").replace(":", "-")):
            raise InvalidArgument(f"{field}[{index}]", f"{given!r} is not a host name or pattern")
        if host not in checked:
            checked.append(host)
    if len(checked) > MAX_HOSTS:
        raise InvalidArgument(field, f"at most {MAX_HOSTS} hosts")
    return tuple(checked)


def host_allowed(patterns: Iterable[str], url: str) -> bool:
    """Whether the URL's host, as the sender reads it (`parse_url`), is one the patterns
    allow (no patterns: any host); a URL the sender cannot read is allowed by none."""
    allowed = tuple(patterns)
    if not allowed:
        return True
    try:
        target = parse_url("url", url)
    except InvalidArgument:
        return False
    host = target.host.removesuffix(".")
    return any(_matches(p, host, target.address) for p in allowed)


def _matches(pattern: str, host: str, address: Address | None) -> bool:
    if address is not None:  # an address literal, compared as an address: [::1] is ::1
        try:
            return ipaddress.ip_address(pattern.strip("[]")) == address
        except ValueError:
            return False
    return pattern == host or (pattern.startswith("*.") and host.endswith(pattern[1:]))


def route_pool(pool: str, task_type: str) -> str:
    """The pool a due run waits in on the node: HTTP_POOL for an HTTP task, else its own."""
    return HTTP_POOL if task_type.startswith(HTTP_TASK_PREFIX) else pool
